"""Merchants, the Config made of them (and of Google Pay's keys), and the Decryptor made from a Config."""
import ctypes
from ctypes import byref, c_char_p, c_size_t, c_void_p

from applepay._library import (BATCH_UNJUDGED, INVALID_CONFIGURATION, LINE_MASK_PAN, LINE_VERIFIED_AT_SIGNING_TIME, OK,
                               REFERENCE_NOW, ConfigurationError,
                               _EMPTY, _Error, _Handle, _check, lib)
from applepay._results import BatchColumns, Result, _check_abi


class Merchant:
    """A merchant's key material as bytes; loaded (and the library's copies wiped) when a Decryptor is made."""

    def __init__(self, kind, **fields):
        self.kind, self.fields = kind, fields

    @classmethod
    def certificate(cls, certificate, private_key, key_password=None, merchant_identifier=None):
        return cls("certificate", certificate=certificate, private_key=private_key, key_password=key_password,
                   merchant_identifier=merchant_identifier)

    @classmethod
    def identifier(cls, merchant_identifier, private_key, key_password=None):
        return cls("identifier", merchant_identifier=merchant_identifier, private_key=private_key, key_password=key_password)

    @classmethod
    def pkcs12(cls, pkcs12, password, merchant_identifier=None):
        return cls("pkcs12", pkcs12=pkcs12, password=password, merchant_identifier=merchant_identifier)

    @classmethod
    def pkcs11(cls, certificate, uri, merchant_identifier=None):
        """The private key stays in a PKCS#11 token: uri is an RFC 7512 URI with module-path= and pin-source= or pin-env=."""
        return cls("pkcs11", certificate=certificate, uri=uri, merchant_identifier=merchant_identifier)

    def _add(self, config, error):
        f = self.fields
        text = _utf8
        if self.kind == "certificate":
            return lib.ap_config_add_merchant_certificate(config, f["certificate"], len(f["certificate"]), f["private_key"],
                                                          len(f["private_key"]), text(f["key_password"]),
                                                          text(f["merchant_identifier"]), byref(error))
        if self.kind == "pkcs11":
            return lib.ap_config_add_merchant_pkcs11(config, f["certificate"], len(f["certificate"]), text(f["uri"]),
                                                     text(f["merchant_identifier"]), byref(error))
        if self.kind == "identifier":
            return lib.ap_config_add_merchant_identifier(config, text(f["merchant_identifier"]), f["private_key"],
                                                         len(f["private_key"]), text(f["key_password"]), byref(error))
        return lib.ap_config_add_merchant_pkcs12(config, f["pkcs12"], len(f["pkcs12"]), text(f["password"]),
                                                 text(f["merchant_identifier"]), byref(error))


def _utf8(s):
    """A text option as the C string the library reads: UTF-8, and refused when it holds a NUL, where C would
    read it cut short ("ECv2SigningOnly\\0off" as ECv2SigningOnly)."""
    data = s.encode() if isinstance(s, str) else s
    if data is not None and b"\0" in data:
        raise ConfigurationError(INVALID_CONFIGURATION, "a text option holds a NUL, which a C string cannot carry")
    return data


class Config(_Handle):
    """An ap_config: merchants, trust anchor and window, Google Pay's root keys, recipient ids and merchant keys
    (private key bytes, PEM or DER), and Samsung Pay's keys (specs, as the CLI's --samsung-key takes them), from
    which Decryptors are made."""

    def __init__(self, merchants=(), insecure_test_root_pem=None, signing_time_window=None,
                 google_root_keys=None, google_recipient_ids=(), google_merchant_keys=(), reference_unit=None,
                 samsung_keys=(), google_protocol_versions=None):
        handle = c_void_p()
        _check(lib.ap_config_new(byref(handle)))
        self.handle = handle
        try:
            for merchant in merchants:
                self.add_merchant(merchant)
            if google_root_keys is not None:
                self.set_google_root_keys(google_root_keys)
            for recipient_id in google_recipient_ids:
                self.add_google_recipient_id(recipient_id)
            for key in google_merchant_keys:
                self.add_google_merchant_key(key)
            if google_protocol_versions is not None:
                versions = list(google_protocol_versions)
                if not versions:
                    raise ConfigurationError(INVALID_CONFIGURATION, "google_protocol_versions is empty: name at least "
                                             "one version, or leave it out for ECv1 and ECv2")
                for version in versions:
                    self.add_google_protocol_version(version)
            for spec in samsung_keys:
                self.add_samsung_key_spec(spec)
            if signing_time_window is not None:
                self.set_signing_time_window(signing_time_window)
            if insecure_test_root_pem is not None:
                self.set_insecure_test_root_pem(insecure_test_root_pem)
            if reference_unit is not None:
                self.set_reference_unit(reference_unit)
        except BaseException:
            self.free()
            raise

    @staticmethod
    def _free(handle):
        return lib.ap_config_free(handle)

    def add_merchant(self, merchant):
        error = _Error()
        _check(merchant._add(self._live(), error), error)

    def set_signing_time_window(self, seconds):
        error = _Error()
        _check(lib.ap_config_set_signing_time_window(self._live(), seconds, byref(error)), error)

    def set_reference_unit(self, unit):
        """What the decrypt calls' `reference` counts for Decryptors made afterwards: REFERENCE_SECONDS (the
        default) or REFERENCE_MILLISECONDS (Google Pay keys and messages expire to the millisecond)."""
        error = _Error()
        _check(lib.ap_config_set_reference_unit(self._live(), unit, byref(error)), error)

    def set_insecure_test_root_pem(self, pem):
        """TESTS ONLY: trusts this PEM root instead of Apple Root CA - G3."""
        error = _Error()
        _check(lib.ap_config_set_insecure_test_root_pem(self._live(), pem, len(pem), byref(error)), error)

    def set_google_root_keys(self, keys_json):
        """Google's root signing keys document (bytes of {"keys": [...]}), replacing any set before."""
        error = _Error()
        _check(lib.ap_config_set_google_root_keys(self._live(), keys_json, len(keys_json), byref(error)), error)

    def add_google_recipient_id(self, recipient_id):
        """A recipient id Google Pay tokens are accepted for: "merchant:ID" or "gateway:ID"."""
        error = _Error()
        _check(lib.ap_config_add_google_recipient_id(self._live(), _utf8(recipient_id), byref(error)), error)

    def add_google_merchant_key(self, private_key, key_password=None):
        """A Google Pay merchant private key (P-256, PEM or DER bytes), tried in the order added."""
        error = _Error()
        _check(lib.ap_config_add_google_merchant_key(self._live(), private_key, len(private_key), _utf8(key_password),
                                                     byref(error)), error)

    def add_google_protocol_version(self, version):
        """A Google Pay protocolVersion accepted: "ECv1", "ECv2" or "ECv2SigningOnly". None added: ECv1 and ECv2;
        adding versions replaces that default, and ECv2SigningOnly (card data signed, not encrypted) is accepted
        only when added. A token of another version is UNSUPPORTED_VERSION, field "protocolVersion"."""
        error = _Error()
        _check(lib.ap_config_add_google_protocol_version(self._live(), _utf8(version), byref(error)), error)

    def add_merchant_spec(self, spec):
        """An Apple Pay merchant as the CLI's --merchant takes it ("cert=PATH,key=PATH", "p12=PATH,...",
        "cert=PATH,pkcs11=URI"), read by the engine's own spec reader."""
        error = _Error()
        _check(lib.ap_config_add_merchant_spec(self._live(), _utf8(spec), byref(error)), error)

    def add_google_merchant_key_spec(self, spec):
        """A Google Pay merchant key as the CLI's --google-merchant-key takes it, read by the engine."""
        error = _Error()
        _check(lib.ap_config_add_google_merchant_key_spec(self._live(), _utf8(spec), byref(error)), error)

    def add_samsung_key_spec(self, spec):
        """A Samsung Pay merchant key (RSA) as the CLI's --samsung-key takes it ("PATH", "key=PATH,...",
        "p12=PATH,...", "pkcs11=URI,pub=PATH"); a token's kid selects the key."""
        error = _Error()
        _check(lib.ap_config_add_samsung_key_spec(self._live(), _utf8(spec), byref(error)), error)

    def add_google_merchant_pkcs11(self, public_key, uri):
        """A Google Pay merchant key in a PKCS#11 token: its public key (or certificate) and RFC 7512 URI."""
        error = _Error()
        _check(lib.ap_config_add_google_merchant_pkcs11(self._live(), public_key, len(public_key), _utf8(uri),
                                                        byref(error)), error)


class Decryptor(_Handle):
    """An ap_decryptor, made from merchants (and options, Google Pay's and Samsung Pay's included) or from a
    Config. It takes Apple Pay, Google Pay and Samsung Pay tokens alike, told apart by shape."""

    def __init__(self, merchants=(), insecure_test_root_pem=None, signing_time_window=None, config=None,
                 google_root_keys=None, google_recipient_ids=(), google_merchant_keys=(), reference_unit=None,
                 samsung_keys=(), google_protocol_versions=None):
        owned = config is None
        if not owned and (merchants or insecure_test_root_pem is not None or signing_time_window is not None
                          or google_root_keys is not None or google_recipient_ids or google_merchant_keys
                          or reference_unit is not None or samsung_keys or google_protocol_versions is not None):
            raise TypeError("Decryptor(config=...) takes its configuration from the Config alone: "
                            "give the other options to the Config")
        if owned:
            config = Config(merchants, insecure_test_root_pem, signing_time_window, google_root_keys,
                            google_recipient_ids, google_merchant_keys, reference_unit, samsung_keys,
                            google_protocol_versions)
        try:
            handle, error = c_void_p(), _Error()
            _check(lib.ap_decryptor_new(config._live(), byref(handle), byref(error)), error)
            self.handle = handle
        finally:
            if owned:
                config.free()

    @staticmethod
    def _free(handle):
        return lib.ap_decryptor_free(handle)

    def decrypt(self, token, reference=REFERENCE_NOW):
        """Returns (code, Result or None): a Result for AP_OK and token errors, None for misuse codes."""
        result = c_void_p()
        code = lib.ap_decrypt(self._live(), token, len(token) if token is not None else 0, reference, byref(result))
        return code, (Result(result) if result.value else None)

    def decrypt_expecting(self, token, payment_request, reference=REFERENCE_NOW):
        """Decrypts and checks the token against payment_request (ApplePayPaymentRequest JSON bytes).
        Returns (code, Result or None, message): PAYMENT_REQUEST_MISMATCH names the member in result.field;
        INVALID_PAYMENT_REQUEST (no Result) has "member: reason" in message."""
        result, error = c_void_p(), _Error()
        code = lib.ap_decrypt_expecting(self._live(), token, len(token) if token is not None else 0, payment_request,
                                        len(payment_request) if payment_request is not None else 0, reference,
                                        byref(result), byref(error))
        return code, (Result(result) if result.value else None), error.message.decode(errors="replace")

    def decrypt_arrow(self, tokens, reference=REFERENCE_NOW, lanes=0, first_index=0, source=b"", mask_pan=False,
                      at_signing_time=False, unjudged=False):
        """Decrypts a pyarrow binary or large_binary array (a null or empty token: INVALID_ARGUMENT, no line) in
        one ap_decrypt_batch_arrow call, its buffers passed by address. Returns BatchColumns (free() it).
        Lines are written with index first_index + i and `source`; unjudged=True leaves replays to the caller
        (every verified token keeps its payment; judge from replay_keys, write replays with replay_line).
        `reference` counts seconds, or milliseconds for a decryptor made with reference_unit=REFERENCE_MILLISECONDS."""
        import pyarrow as pa

        if pa.types.is_string(tokens.type) or pa.types.is_large_string(tokens.type):
            tokens = tokens.view(pa.binary() if pa.types.is_string(tokens.type) else pa.large_binary())
        if pa.types.is_binary(tokens.type):
            width = 4
        elif pa.types.is_large_binary(tokens.type):
            width = 8
        else:
            raise TypeError(f"tokens must be a binary or large_binary array, not {tokens.type}")
        if tokens.null_count:
            import pyarrow.compute as pc  # only here: its import costs about a second in a new process

            tokens = pc.if_else(tokens.is_null(), pa.scalar(b"", tokens.type), tokens)
        # The library trusts the offsets (it has no length of the data buffer): pyarrow checks the last one against
        # it (arrays made in Python are checked when made; one imported through the C data interface is not).
        tokens.validate()
        _, offsets, data = tokens.buffers()
        # An array slice shares its parent's offsets buffer: start at the slice's first offset.
        offsets_address = offsets.address + tokens.offset * width
        data_address = data.address if data is not None and data.size else ctypes.addressof(_EMPTY)
        source = source.encode() if isinstance(source, str) else source
        flags = ((LINE_MASK_PAN if mask_pan else 0) | (LINE_VERIFIED_AT_SIGNING_TIME if at_signing_time else 0)
                 | (BATCH_UNJUDGED if unjudged else 0))
        handle = c_void_p()
        code = lib.ap_decrypt_batch_arrow(self._live(), offsets_address, width, data_address, len(tokens), first_index,
                                          source, len(source), reference, lanes, flags, byref(handle))
        _check_abi(code, "ap_decrypt_batch_arrow")
        return BatchColumns(handle)

    def decrypt_batch(self, tokens, reference=REFERENCE_NOW, lanes=0):
        """Returns (code, [Result]) in input order; replays within the batch are REPLAYED_TRANSACTION."""
        count = len(tokens)
        array = (c_char_p * count)(*tokens)
        lengths = (c_size_t * count)(*(len(t) if t is not None else 0 for t in tokens))
        results = (c_void_p * count)()
        code = lib.ap_decrypt_batch(self._live(), array, lengths, count, reference, lanes, results)
        return code, [Result(c_void_p(r)) for r in results] if code == OK else []
