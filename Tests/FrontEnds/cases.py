"""The table's rows: every Apple Pay, Google Pay and Samsung Pay test case with its expected code, grouped by the
options that open it (merchant keys, trust root, Google Pay root keys, recipient ids and merchant keys, Samsung Pay
keys, the clock), written once as a
JSON manifest that every front end's runner reads, the Swift API's test (FrontEndTableTests) included.

Sources, each with its own expected outcome:
- ../shared/vectors/apple/*: meta.json's `expect`, at the vector's signingTime, under Apple Root CA - G3.
- ../shared/vectors/google/*: expected.json's `outcome` (and `accept`), at meta.json's `now`; their "ok" messages are
  not payments (Tink's "plaintext"), so every front end refuses them as invalidPayload once verified and decrypted.
- Vectors/ (the project's own factory tokens, `mint-tokens vectors`): manifest.json's codes for tokens/ and for each
  archive.jsonl line alone (the archive's replay line, byte for byte its first line, is left out: alone it is that
  line again, and the replay checks below judge replays).
- `mint-tokens google DIR N`: cases.jsonl with cases.json's codes (one token per rule of the format).
- ../shared/vectors/samsung/*: expected.json's `outcome`, at meta.json's `now`, under the folder's merchant key.
- `mint-tokens samsung DIR N`: cases.jsonl with cases.json's codes (one token per rule), and tokens.jsonl's payments
  in the envelope {"paymentToken", "paymentRequest"} with a request they match and two they do not (currency, amount).

Replays: a token given twice to a front end that judges replays. The second is replayedTransaction naming the
wallet's own field: header.transactionId for Apple Pay, messageId (or the signed message) for Google Pay, cryptogram
for Samsung Pay, whose payment given again in another wrapper (the web checkout's envelope, a bare JWE) is a replay too.
"""
import json
import os
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "Vectors"
SHARED = Path(os.environ.get("APPLEPAY_SHARED_VECTORS", ROOT / ".." / "shared" / "vectors" / "apple")).resolve()
GOOGLE = Path(os.environ.get("APPLEPAY_GOOGLE_VECTORS", SHARED.parent / "google")).resolve()
SAMSUNG = Path(os.environ.get("APPLEPAY_SAMSUNG_VECTORS", SHARED.parent / "samsung")).resolve()
# mint-tokens samsung's clock: every token's utc is 2026-03-01T12:00:00.000Z (its stale and future cases lie one
# millisecond outside the window from exactly then).
SAMSUNG_MINTED_NOW_MS = 1772366400000
# mint-tokens google's recipient id and clock (tokens sent at 2026-03-01T12:00:00Z, messages expire an hour later).
RECIPIENT = "merchant:12345678901234567890"
MINTED_NOW_MS = 1772366430000  # 2026-03-01T12:00:30.000Z
# The fields a Google Pay replay may name (issue 40: "messageId or the signed message"); an Apple Pay one names this.
GOOGLE_REPLAY_FIELDS = ("messageId", "signedMessage")
APPLE_REPLAY_FIELDS = ("header.transactionId",)
SAMSUNG_REPLAY_FIELDS = ("cryptogram",)
# A payment request that mint-tokens samsung's payments (USD 10.00) match (PaymentRequest's JSON).
SAMSUNG_REQUEST = {"countryCode": "US", "currencyCode": "USD", "supportedNetworks": ["visa", "masterCard"],
                   "merchantCapabilities": ["supports3DS"], "total": {"label": "Example Shop", "amount": "10.00"}}
# The engine's token codes (ApplePayError.Code; an `accept` name outside them is another library's word).
CODES = {"ok", "malformedToken", "unsupportedVersion", "invalidSignature", "untrustedCertificateChain",
         "signingTimeOutOfRange", "unknownMerchantKey", "decryptionFailed", "invalidPayload", "replayedTransaction",
         "paymentRequestMismatch", "intermediateKeyExpired", "messageExpired"}
# The shared Google vectors' outcomes as codes (see above).
GOOGLE_OUTCOMES = {"ok": "invalidPayload", "malformed": "malformedToken", "invalidSignature": "invalidSignature",
                   "decryptionFailed": "decryptionFailed"}


def iso_milliseconds(milliseconds):
    """2018-11-15T22:09:53.000Z: the form the CLI's --now, the service's fixed now and Spark's now take."""
    seconds, ms = divmod(milliseconds, 1000)
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{ms:03d}Z"


def milliseconds_of(iso):
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def one_line(token):
    """A token as one JSONL line: its line breaks (JSON white space in the vectors written over several lines) made
    spaces, the surrounding white space dropped."""
    return token.strip().replace(b"\r", b"").replace(b"\n", b" ")


class Manifest:
    def __init__(self, work):
        self.work = Path(work)
        self.tokens = self.work / "tokens"
        self.tokens.mkdir(parents=True, exist_ok=True)
        self.groups = []
        self.replays = []

    def group(self, name, now_ms, merchants=(), trust_root=None, google=None, samsung=()):
        """merchants: (cert path or None, merchant identifier or None, key path) triples; samsung: Samsung Pay key
        specs (as the CLI's --samsung-key takes them)."""
        specs = [",".join(([f"cert={c}"] if c else []) + ([f"id={i}"] if i else []) + [f"key={k}"])
                 for c, i, k in merchants]
        group = {"name": name, "nowMilliseconds": now_ms, "now": iso_milliseconds(now_ms), "merchants": specs,
                 "merchantFiles": [{"cert": c, "id": i, "key": k} for c, i, k in merchants],
                 "trustRoot": trust_root, "google": google, "samsung": list(samsung), "cases": []}
        self.groups.append(group)
        return group

    def case(self, group, name, wallet, token, expect):
        """expect: the codes the case's sources allow (the first is the documented one)."""
        case_id = f"{group['name']}/{name}"
        path = self.tokens / f"{len(self.tokens_written())}.token"
        path.write_bytes(token)
        group["cases"].append({"id": case_id, "wallet": wallet, "tokenFile": str(path), "expect": list(expect)})
        return case_id

    def tokens_written(self):
        return [c for g in self.groups for c in g["cases"]]

    def replay(self, group, case_id, wallet, again=None, label=None):
        """The case's token, then again (the same token, or the file `again`: the same payment in another wrapper)."""
        fields = {"apple": APPLE_REPLAY_FIELDS, "google": GOOGLE_REPLAY_FIELDS,
                  "samsung": SAMSUNG_REPLAY_FIELDS}[wallet]
        case = next(c for c in group["cases"] if c["id"] == case_id)
        self.replays.append({"id": f"replay/{case_id}" + (f" then {label}" if label else ""), "group": group["name"],
                             "case": case_id, "wallet": wallet, "tokenFile": case["tokenFile"],
                             "againFile": str(again or case["tokenFile"]), "fields": list(fields)})

    def write(self):
        path = self.work / "manifest.json"
        path.write_text(json.dumps({"groups": self.groups, "replays": self.replays}, indent=1))
        return path


def build(work, google_minted, samsung_minted):
    """The manifest of every case (see the module's comment); google_minted, samsung_minted: `mint-tokens google` and
    `mint-tokens samsung` folders (the latter of at least three tokens)."""
    m = Manifest(work)
    assert SHARED.is_dir() and len(list(SHARED.iterdir())) >= 9, f"the shared Apple vectors are missing at {SHARED}"
    assert GOOGLE.is_dir() and len([p for p in GOOGLE.iterdir() if p.is_dir()]) >= 9, \
        f"the shared Google vectors are missing at {GOOGLE}"
    for folder in sorted(p for p in SHARED.iterdir() if p.is_dir()):
        meta = json.loads((folder / "meta.json").read_text())
        cert = str(folder / meta["certFile"]) if meta.get("certFile") else None
        merchant = (cert, None if cert else meta["merchantIdentifier"], str(folder / meta["keyFile"]))
        group = m.group(f"apple/{folder.name}", milliseconds_of(meta["signingTime"]), [merchant])
        m.case(group, "token", "apple", (folder / "token.json").read_bytes(), [meta["expect"]])

    for folder in sorted(p for p in GOOGLE.iterdir() if (p / "token.json").exists()):
        meta = json.loads((folder / "meta.json").read_text())
        expected = json.loads((folder / "expected.json").read_text())
        keys = [str(folder / k) for k in sorted(os.listdir(folder)) if k.startswith("merchant_key")]
        group = m.group(f"google/{folder.name}", meta["now"], google={
            "rootKeys": str(folder / "root_keys.json"), "recipientIds": [meta["recipientId"]], "merchantKeys": keys})
        codes = [GOOGLE_OUTCOMES[expected["outcome"]]] + [c for c in expected.get("accept", []) if c in CODES]
        m.case(group, "token", "google", (folder / "token.json").read_bytes(), codes)

    bundled = json.loads((VECTORS / "manifest.json").read_text())
    group = m.group("bundled", milliseconds_of(bundled["now"]),
                    [(str(VECTORS / f"merchants/{k}.cert.pem"), None, str(VECTORS / f"merchants/{k}.key.pem"))
                     for k in ("ec", "rsa")], trust_root=str(VECTORS / bundled["trustRoot"]))
    for path, code in sorted(bundled["tokens"].items()):
        m.case(group, path, "apple", (VECTORS / path).read_bytes(), [code])
    archive = [line for line in (VECTORS / bundled["archive"]["file"]).read_bytes().split(b"\n") if line]
    expect = bundled["archive"]["expect"]
    assert len(archive) == len(expect)
    for i, (line, code) in enumerate(zip(archive, expect)):
        if code == "replayedTransaction":
            assert line in archive[:i], "the archive's replay line is no longer an earlier line again"
            continue
        m.case(group, f"archive:{i + 1}", "apple", line, [code])
    m.replay(group, "bundled/tokens/ec-3dsecure.json", "apple")
    m.replay(group, "bundled/tokens/rsa-3dsecure.json", "apple")

    minted = Path(google_minted)
    group = m.group("google-rules", MINTED_NOW_MS, google={
        "rootKeys": str(minted / "root_keys.json"), "recipientIds": ["gateway:someone-else", RECIPIENT],
        "merchantKeys": [str(minted / "merchant_key.pem"), str(minted / "merchant_key_2.pem")]})
    rules = json.loads((minted / "cases.json").read_text())
    lines = [line for line in (minted / "cases.jsonl").read_bytes().split(b"\n") if line]
    assert len(rules) == len(lines) >= 16
    for rule, line in zip(rules, lines):
        m.case(group, rule["name"], "google", line, [rule["code"]])
    m.replay(group, "google-rules/ecv2", "google")
    m.replay(group, "google-rules/ecv1", "google")

    assert SAMSUNG.is_dir() and len([p for p in SAMSUNG.iterdir() if p.is_dir()]) >= 2, \
        f"the shared Samsung vectors are missing at {SAMSUNG}"
    for folder in sorted(p for p in SAMSUNG.iterdir() if (p / "token.json").exists()):
        meta = json.loads((folder / "meta.json").read_text())
        expected = json.loads((folder / "expected.json").read_text())
        group = m.group(f"samsung/{folder.name}", meta["now"], samsung=[str(folder / k) for k in meta["keyFiles"]])
        m.case(group, "token", "samsung", (folder / "token.json").read_bytes(), [expected["outcome"]])

    minted = Path(samsung_minted)
    group = m.group("samsung-rules", SAMSUNG_MINTED_NOW_MS,
                    samsung=[str(minted / "merchant_key.pem"), str(minted / "merchant_key_2.pem")])
    rules = json.loads((minted / "cases.json").read_text())
    lines = [line for line in (minted / "cases.jsonl").read_bytes().split(b"\n") if line]
    assert len(rules) == len(lines) >= 30
    for rule, line in zip(rules, lines):
        m.case(group, rule["name"], "samsung", line, [rule["code"]])
    payments = [line for line in (minted / "tokens.jsonl").read_bytes().split(b"\n") if line]
    assert len(payments) >= 3
    requests = [("request-matches", SAMSUNG_REQUEST, "ok"),
                ("request-other-currency", dict(SAMSUNG_REQUEST, currencyCode="EUR"), "paymentRequestMismatch"),
                ("request-other-amount", dict(SAMSUNG_REQUEST, total={"label": "Example Shop", "amount": "12.00"}),
                 "paymentRequestMismatch")]
    for (name, request, code), payment in zip(requests, payments):
        envelope = b'{"paymentToken":' + payment + b',"paymentRequest":' + json.dumps(request).encode() + b"}"
        m.case(group, name, "samsung", envelope, [code])
    m.case(group, "app-envelope-payment", "samsung", (minted / "token-app.json").read_bytes(), ["ok"])
    m.replay(group, "samsung-rules/app-envelope", "samsung")
    m.replay(group, "samsung-rules/request-matches", "samsung")
    m.replay(group, "samsung-rules/app-envelope-payment", "samsung")
    m.replay(group, "samsung-rules/app-envelope-payment", "samsung", minted / "token-web.json", "web checkout")
    m.replay(group, "samsung-rules/app-envelope-payment", "samsung", minted / "token.jwe", "bare JWE")
    return m.write()
