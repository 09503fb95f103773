#!/usr/bin/env python3
# Builds the fuzzers' seed corpora at run time (nothing is committed): token and decrypt seeds from
# Vectors/ and the shared Apple vectors, CMS seeds from their decoded signatures, payload seeds from
# the samples below and the Apple vectors' expected plaintexts; the Google Pay harnesses' seeds from the
# shared Google vectors and the factory's tokens (`mint-tokens google` output), and the Google Pay
# decrypt harness's engine folder (OUT_DIR/google-engine: the vectors' and the factory's root keys,
# merchant keys and recipient ids together); the Samsung Pay harnesses' seeds from the shared Samsung vectors
# (beside the Apple ones) and the factory's (`mint-tokens samsung` output), and their engine's keys.
# Usage: make-seeds.py OUT_DIR REPO_ROOT APPLE_VECTORS_DIR [GOOGLE_VECTORS_DIR [MINTED_GOOGLE_DIR
#        [MINTED_SAMSUNG_DIR]]]
#   (writes OUT_DIR/{token,cms,payload,decrypt,google-token,google-signed,google-root-keys,google-message,
#    google-decrypt,samsung-token,samsung-decrypt}/, OUT_DIR/google-engine/ and OUT_DIR/samsung-engine/)
import base64, glob, hashlib, json, os, sys

out, root, apple = sys.argv[1], sys.argv[2], sys.argv[3]
google = sys.argv[4] if len(sys.argv) > 4 else None
minted = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else None
minted_samsung = sys.argv[6] if len(sys.argv) > 6 and sys.argv[6] else None
samsung = os.path.join(os.path.dirname(apple.rstrip("/")), "samsung")
counts = {}

def seed(corpus, data):
    if isinstance(data, str):
        data = data.encode()
    folder = os.path.join(out, corpus)
    os.makedirs(folder, exist_ok=True)
    # Named by content, as libFuzzer names its own units: duplicates collapse.
    with open(os.path.join(folder, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)
    counts[corpus] = counts.get(corpus, 0) + 1

def payment_data(value):
    """The paymentData object inside any accepted wrapping (PKPaymentToken, Apple Pay JS, base64)."""
    if isinstance(value, str):
        try:
            return payment_data(json.loads(base64.b64decode(value, validate=True)))
        except ValueError:
            return None
    if isinstance(value, dict):
        if "signature" in value and "header" in value:
            return value
        for member in value.values():
            found = payment_data(member)
            if found is not None:
                return found
    return None

def token(data):
    seed("token", data)
    seed("decrypt", data)
    try:
        text = data.decode().strip()
        parsed = json.loads(text) if text.startswith(("{", "\"")) else text
    except ValueError:
        return
    found = payment_data(parsed)
    if found is not None and isinstance(found.get("signature"), str):
        try:
            seed("cms", base64.b64decode(found["signature"]))
        except ValueError:
            pass

for path in sorted(glob.glob(os.path.join(root, "Vectors", "tokens", "*"))):
    token(open(path, "rb").read())
archive = os.path.join(root, "Vectors", "archive.jsonl")
if os.path.exists(archive):
    for line in open(archive, "rb").read().split(b"\n"):
        if line:
            token(line)
for path in sorted(glob.glob(os.path.join(apple, "*", "token.json"))):
    token(open(path, "rb").read())

# Request bodies for the request edge (FuzzDecrypt runs decryptRequest too): each Vectors/ token in an
# envelope, alone and with payment requests (matching or not: the binding check runs either way).
requests = [
    {"countryCode": "US", "currencyCode": "USD", "supportedNetworks": ["visa", "masterCard"],
     "merchantCapabilities": ["supports3DS"], "total": {"label": "Example Shop", "amount": "10.00"}},
    {"countryCode": "FR", "currencyCode": "EUR", "supportedNetworks": ["visa"], "merchantCapabilities": ["supportsEMV"],
     "total": {"label": "Boutique", "amount": "2.50", "type": "final"}, "applicationData": "c2VlZA==",
     "lineItems": [{"label": "a", "amount": "1.25"}], "multiTokenContexts": [
         {"merchantIdentifier": "merchant.com.example", "externalIdentifier": "x", "merchantName": "M",
          "amount": "1.25"}]},
]
for path in sorted(glob.glob(os.path.join(root, "Vectors", "tokens", "*.json"))):
    try:
        parsed = json.loads(open(path, "rb").read())
    except ValueError:
        continue
    seed("decrypt", json.dumps({"paymentToken": parsed}, separators=(",", ":")))
    for request in requests:
        seed("decrypt", json.dumps({"paymentToken": parsed, "paymentRequest": request}, separators=(",", ":")))
for path in sorted(glob.glob(os.path.join(apple, "*", "expected.json"))):
    seed("payload", open(path, "rb").read())

# Plaintexts Apple documents (3-D Secure, EMV, merchant token) and the edges of the model.
payloads = [
    {"applicationPrimaryAccountNumber": "4761120010001000", "applicationExpirationDate": "291231",
     "currencyCode": "840", "transactionAmount": 1000, "deviceManufacturerIdentifier": "040010030273",
     "paymentDataType": "3DSecure", "paymentData": {"onlinePaymentCryptogram": "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", "eciIndicator": "5"}},
    {"applicationPrimaryAccountNumber": "5204240250197000", "applicationExpirationDate": "300131",
     "currencyCode": "978", "transactionAmount": "250", "cardholderName": "Jane Appleseed",
     "paymentDataType": "EMV", "paymentData": {"emvData": "9F2608AABBCCDDEEFF0011", "encryptedPINData": "00"}},
    {"applicationPrimaryAccountNumber": "4761120010001000", "paymentDataType": "3DSecure",
     "merchantTokenIdentifier": "DNITHE000000000000000001", "merchantTokenMetadata": {"cardArt": [{"url": "x", "type": "a"}]},
     "authenticationResponses": [{"authenticationType": "3DS", "response": "ok"}],
     "paymentData": {"onlinePaymentCryptogram": "AAAA"}, "unknownMember": [1, 2.5e-3, True, False, None]},
    {"applicationPrimaryAccountNumber": "4761120010001000", "paymentDataType": "Other", "paymentData": None},
]
for value in payloads:
    seed("payload", json.dumps(value, separators=(",", ":")))
for text in ['{"applicationPrimaryAccountNumber":"\\u0034\\ud83d\\ude00"}', '{"note":"no card here"}', "[1,2]",
             '{"a":{"a":{"a":{"a":[[[[[]]]]]}}}}', '{"applicationPrimaryAccountNumber":"1","applicationPrimaryAccountNumber":"2"}']:
    seed("payload", text)

# ---- Google Pay ----------------------------------------------------------------------------------------
VERSIONS = ["ECv1", "ECv2", "ECv2SigningOnly"]
google_tokens, root_documents, merchant_keys, recipients = [], [], [], []
if google and os.path.isdir(google):
    for folder in sorted(glob.glob(os.path.join(google, "*"))):
        if not os.path.isfile(os.path.join(folder, "token.json")):
            continue
        google_tokens.append(open(os.path.join(folder, "token.json"), "rb").read())
        meta = json.load(open(os.path.join(folder, "meta.json")))
        recipients.append(meta.get("recipientId"))
        root_documents.append(open(os.path.join(folder, meta.get("rootKeysFile", "root_keys.json")), "rb").read())
        merchant_keys += [os.path.join(folder, name) for name in meta.get("merchantKeyFiles", [])]
        expected = json.load(open(os.path.join(folder, "expected.json")))
        if isinstance(expected.get("plaintext"), str):
            seed("google-message", bytes([VERSIONS.index(meta["protocolVersion"])]) + expected["plaintext"].encode())
if minted and os.path.isdir(minted):
    for name in ("tokens.jsonl", "cases.jsonl"):
        path = os.path.join(minted, name)
        if os.path.exists(path):
            google_tokens += [line for line in open(path, "rb").read().split(b"\n") if line]
    for name in sorted(os.listdir(minted)):
        path = os.path.join(minted, name)
        if name.startswith("root_keys") and name.endswith(".json"):
            root_documents.append(open(path, "rb").read())
        elif name.endswith(".json") and name != "cases.json":
            google_tokens.append(open(path, "rb").read())
        elif name.startswith("merchant_key") and name.endswith(".pem"):
            merchant_keys.append(path)
    recipients.append("merchant:12345678901234567890")
for data in google_tokens:
    seed("google-token", data)
    seed("google-decrypt", data)
    try:
        token = json.loads(data)
    except ValueError:
        continue
    if not isinstance(token, dict):
        continue
    version = token.get("protocolVersion")
    key = token.get("intermediateSigningKey")
    if isinstance(key, dict) and isinstance(key.get("signedKey"), str):
        seed("google-signed", b"\x00" + key["signedKey"].encode())
    if isinstance(token.get("signedMessage"), str) and version in VERSIONS:
        seed("google-signed", bytes([1 + VERSIONS.index(version)]) + token["signedMessage"].encode())
        if version == "ECv2SigningOnly":
            seed("google-message", b"\x02" + token["signedMessage"].encode())
for document in root_documents:
    seed("google-root-keys", document)
# Payment messages as Google seals them (ECv2 and ECv1 names), and the model's edges.
for version, details in [(1, {"pan": "4111111111111111", "expirationMonth": 12, "expirationYear": 2030,
                              "authMethod": "CRYPTOGRAM_3DS", "cryptogram": "AgAAAAAABk4DWZ4C28yUQAAAAAA=",
                              "eciIndicator": "07"}),
                         (1, {"pan": "4111111111111111", "expirationMonth": "01", "expirationYear": "2031",
                              "authMethod": "PAN_ONLY"}),
                         (0, {"dpan": "4111111111111111", "expirationMonth": 12, "expirationYear": 2030,
                              "authMethod": "CRYPTOGRAM_3DS", "3dsCryptogram": "AgAAAAAABk4DWZ4C28yUQAAAAAA=",
                              "3dsEciIndicator": "07"})]:
    message = {"gatewayMerchantId": "exampleGatewayMerchantId", "messageExpiration": "1893456000000",
               "messageId": "AH2EjtfSc0QnjX5ipDMW0BKxRevGTE0CLvqd9pE6XW2T", "paymentMethod": "CARD",
               "paymentMethodDetails": details}
    seed("google-message", bytes([version]) + json.dumps(message, separators=(",", ":")).encode())
for text in ['{"messageId":"m","paymentMethod":"CARD","paymentMethodDetails":{"pan":4111}}',
             '{"messageId":"m","messageExpiration":"x","paymentMethod":"CARD","paymentMethodDetails":{}}',
             '{"messageId":"m","paymentMethod":"CARD","paymentMethodDetails":{"pan":"1","dpan":"2","pan":"3"}}']:
    seed("google-message", b"\x00" + text.encode())
# The decrypt harness's engine: every root key (deduplicated), merchant key and recipient id above.
engine = os.path.join(out, "google-engine")
os.makedirs(engine, exist_ok=True)
keys, seen = [], set()
for document in root_documents:
    try:
        entries = json.loads(document).get("keys", [])
    except (ValueError, AttributeError):
        continue
    for entry in entries:
        identity = (entry.get("protocolVersion"), entry.get("keyValue"))
        if identity not in seen:
            seen.add(identity)
            keys.append(entry)
with open(os.path.join(engine, "root_keys.json"), "w") as f:
    json.dump({"keys": keys[:64]}, f)
pems = list(dict.fromkeys(open(path, "rb").read() for path in merchant_keys))  # the vectors share keys
for n, pem in enumerate(pems):
    with open(os.path.join(engine, f"merchant_key_{n:02d}.pem"), "wb") as f:
        f.write(pem)
with open(os.path.join(engine, "recipients.txt"), "w") as f:
    f.write("\n".join(dict.fromkeys(r for r in recipients if r)) + "\n")

# ---- Samsung Pay ---------------------------------------------------------------------------------------
# The shared vectors' tokens and keys, the factory's (every rule once in cases.jsonl, its wrappers), and each
# token's compact JWE alone; the decrypt harness's engine: every merchant key (its folder, samsung-engine).
samsung_tokens, samsung_keys = [], []
for folder in sorted(d for d in glob.glob(os.path.join(samsung, "*")) if os.path.isdir(d)):
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.startswith("token"):
            samsung_tokens.append(open(path, "rb").read())
        elif name.endswith(".pem"):
            samsung_keys.append(path)
if minted_samsung and os.path.isdir(minted_samsung):
    for name in sorted(os.listdir(minted_samsung)):
        path = os.path.join(minted_samsung, name)
        if name.endswith(".jsonl"):
            samsung_tokens += [line for line in open(path, "rb").read().split(b"\n") if line]
        elif name.startswith("token"):
            samsung_tokens.append(open(path, "rb").read())
        elif name.startswith("merchant_key") and name.endswith(".pem"):
            samsung_keys.append(path)
for data in samsung_tokens:
    seed("samsung-token", data)
    seed("samsung-decrypt", data)
    try:
        wrapper = json.loads(data)
    except ValueError:
        continue
    jwe = wrapper.get("3DS", {}).get("data") if isinstance(wrapper, dict) and isinstance(wrapper.get("3DS"), dict) else None
    if isinstance(jwe, str):
        seed("samsung-token", jwe)
        seed("samsung-decrypt", jwe)
engine = os.path.join(out, "samsung-engine")
os.makedirs(engine, exist_ok=True)
for n, pem in enumerate(dict.fromkeys(open(path, "rb").read() for path in samsung_keys)):
    with open(os.path.join(engine, f"merchant_key_{n:02d}.pem"), "wb") as f:
        f.write(pem)

print(" ".join(f"{name}={counts.get(name, 0)}" for name in (
    "token", "cms", "payload", "decrypt", "google-token", "google-signed", "google-root-keys", "google-message",
    "google-decrypt", "samsung-token", "samsung-decrypt")))
