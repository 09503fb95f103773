"""The CLI's merchant specs and engine options, picklable: what the library function and the job take."""
import datetime
import os
import time

import applepay

DEFAULT_MAX_ITEM_BYTES = 1 << 20


class EngineOptions:
    """The CLI's engine options, picklable: specs and paths travel to executors, never key bytes.

    merchants: Apple Pay --merchant specs; google_root_keys (a keys document's path), google_recipient_ids and
    google_merchant_keys (--google-merchant-key specs): Google Pay's, as the CLI takes them; samsung_keys
    (--samsung-key specs, read by the engine on each executor): Samsung Pay's. Any wallet's keys, alone or
    together; Google Pay needs the root keys and a recipient id. google_protocol_versions: the
    --google-protocol-version names accepted (None: ECv1 and ECv2; an empty list is refused; ECv2SigningOnly only
    when named)."""

    def __init__(self, merchants=(), trust_root=None, now=None, at_signing_time=False, window=None,
                 google_root_keys=None, google_recipient_ids=(), google_merchant_keys=(), samsung_keys=(),
                 google_protocol_versions=None):
        google = (google_root_keys is not None or bool(google_recipient_ids) or bool(google_merchant_keys)
                  or bool(google_protocol_versions))
        if not merchants and not google and not samsung_keys:
            raise ValueError("at least one merchant spec (or the Google Pay options, or a Samsung Pay key) is required")
        if google and google_root_keys is None:
            raise ValueError("Google Pay options need the root keys (--google-root-keys)")
        if google and not google_recipient_ids:
            raise ValueError("Google Pay options need a recipient id (--google-recipient-id)")
        if now is not None and at_signing_time:
            raise ValueError("now and at_signing_time exclude each other")
        if window is not None and window < 0:
            raise ValueError("the window must not be negative")
        self.merchants = [parse_merchant_spec(spec) and spec for spec in merchants]
        self.google_root_keys = google_root_keys
        self.google_recipient_ids = list(google_recipient_ids)
        self.google_merchant_keys = [parse_google_key_spec(spec) and spec for spec in google_merchant_keys]
        if google_protocol_versions is not None:
            google_protocol_versions = list(google_protocol_versions)
            if not google_protocol_versions:
                raise ValueError("google_protocol_versions is empty: name at least one version, or leave it out "
                                 "for ECv1 and ECv2")
            for version in google_protocol_versions:
                if version not in ("ECv1", "ECv2", "ECv2SigningOnly"):
                    raise ValueError(f"--google-protocol-version '{version}' is none of ECv1, ECv2, ECv2SigningOnly")
        self.google_protocol_versions = google_protocol_versions
        self.samsung_keys = list(samsung_keys)
        self.trust_root = trust_root
        self.at_signing_time = at_signing_time
        # One reference time for every executor, in milliseconds (Google Pay keys and messages expire to the
        # millisecond): the CLI reads the clock as it goes, a cluster's clocks differ.
        if at_signing_time:
            self.reference = applepay.REFERENCE_SIGNING_TIME
        elif now is not None:
            self.reference = parse_time(now)
        else:
            self.reference = time.time_ns() // 1_000_000
        self.window = window

    def decryptor(self):
        merchants = [load_merchant(spec) for spec in self.merchants]
        root = google_root = None
        if self.trust_root is not None:
            with open(self.trust_root, "rb") as f:
                root = f.read()
        if self.google_root_keys is not None:
            with open(self.google_root_keys, "rb") as f:
                google_root = f.read()
        # The job's reference is in milliseconds (self.reference), as the CLI's --now counts them.
        config = applepay.Config(merchants, insecure_test_root_pem=root, signing_time_window=self.window,
                                 google_root_keys=google_root, google_recipient_ids=self.google_recipient_ids,
                                 reference_unit=applepay.REFERENCE_MILLISECONDS, samsung_keys=self.samsung_keys,
                                 google_protocol_versions=self.google_protocol_versions)
        try:
            for spec in self.google_merchant_keys:
                add_google_merchant_key(config, spec)
            return applepay.Decryptor(config=config)
        finally:
            config.free()


def parse_time(text):
    """Unix milliseconds of an ISO 8601 time with a zone (2026-03-01T12:01:00Z, 2026-03-01T12:01:00.123Z), as
    the CLI's --now: fractional seconds count to the millisecond (further digits are dropped)."""
    if isinstance(text, datetime.datetime):
        moment = text
    else:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"--now '{text}' has no time zone; give e.g. 2026-03-01T12:01:00Z")
    # Exact integer arithmetic: timestamp() is a float, which can land a microsecond below a millisecond.
    since = moment - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (since.days * 86_400 + since.seconds) * 1000 + since.microseconds // 1000


def _spec_values(option, text, fields):
    """The fields of a spec as the CLI reads them (both --merchant and --google-merchant-key): comma-separated
    key=value parts, empty parts skipped, each name one of `fields` and given once."""
    values = {}
    for part in (p for p in text.split(",") if p):
        name, eq, value = part.partition("=")
        if not eq:
            raise ValueError(f"{option} '{text}': '{part}' is not key=value")
        if name not in fields:
            raise ValueError(f"{option} '{text}': unknown field '{name}' ({', '.join(fields)})")
        if name in values:
            raise ValueError(f"{option} '{text}': '{name}' given twice")
        values[name] = value
    return values


_SPEC_FIELDS = ["cert", "key", "id", "p12", "password-env", "key-password-env"]


def parse_merchant_spec(text):
    """cert=PATH,key=PATH | id=MERCHANT_ID,key=PATH | p12=PATH[,password-env=VAR] (+ key-password-env=VAR)."""
    values = _spec_values("--merchant", text, _SPEC_FIELDS)
    if "p12" in values:
        if "cert" in values or "key" in values:
            raise ValueError(f"--merchant '{text}': p12= excludes cert= and key=")
    elif "key" not in values:
        raise ValueError(f"--merchant '{text}': key=PATH is required (or p12=PATH)")
    elif "cert" not in values and "id" not in values:
        raise ValueError(f"--merchant '{text}': give cert=PATH or id=MERCHANT_ID with key=PATH")
    return values


_GOOGLE_SPEC_FIELDS = ["key", "key-password-env", "p12", "password-env", "pkcs11", "pub", "cert"]


def parse_google_key_spec(text):
    """--google-merchant-key: PATH | key=PATH[,key-password-env=VAR] | pkcs11=URI,pub=PATH | pkcs11=URI,cert=PATH
    (the CLI's forms; p12= is the CLI's only: the C ABI takes a Google Pay key as PEM or DER)."""
    if text.startswith("pkcs11:"):
        raise ValueError(f"--google-merchant-key '{text}': a PKCS#11 Google Pay key is written pkcs11=URI,pub=PATH")
    if "=" not in text:
        return {"key": text}
    values = _spec_values("--google-merchant-key", text, _GOOGLE_SPEC_FIELDS)
    if "p12" in values:
        raise ValueError(f"--google-merchant-key '{text}': p12= is not supported by the Spark job (give the key as "
                         "PEM or DER: key=PATH)")
    if "pkcs11" in values:
        if ("pub" in values) == ("cert" in values) or "key" in values:
            raise ValueError(f"--google-merchant-key '{text}': pkcs11=URI takes pub=PATH or cert=PATH, and excludes key=")
    elif "key" not in values:
        raise ValueError(f"--google-merchant-key '{text}': give PATH, key=PATH or pkcs11=URI,pub=PATH")
    return values


def add_google_merchant_key(config, text):
    """Adds a --google-merchant-key spec's key to an applepay.Config (files read where this runs)."""
    values = parse_google_key_spec(text)
    if "pkcs11" in values:
        with open(values.get("pub") or values["cert"], "rb") as f:
            config.add_google_merchant_pkcs11(f.read(), values["pkcs11"])
        return
    password = None
    if "key-password-env" in values:
        variable = values["key-password-env"]
        if variable not in os.environ:
            raise ValueError(f"--google-merchant-key '{text}': environment variable {variable} is not set")
        password = os.environ[variable]
    with open(values["key"], "rb") as f:
        config.add_google_merchant_key(f.read(), password)


def load_merchant(text):
    """An applepay.Merchant from a spec; files and password variables are read where this runs (the executor)."""
    values = parse_merchant_spec(text)

    def secret(field):
        variable = values.get(field)
        if variable is None:
            return None
        if variable not in os.environ:
            raise ValueError(f"--merchant '{text}': environment variable {variable} is not set")
        return os.environ[variable]

    def read(path):
        with open(path, "rb") as f:
            return f.read()

    if "p12" in values:
        return applepay.Merchant.pkcs12(read(values["p12"]), secret("password-env") or "", values.get("id"))
    key = read(values["key"])
    if "cert" in values:
        return applepay.Merchant.certificate(read(values["cert"]), key, secret("key-password-env"), values.get("id"))
    return applepay.Merchant.identifier(values["id"], key, secret("key-password-env"))
