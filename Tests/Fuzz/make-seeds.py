#!/usr/bin/env python3
# Builds the fuzzers' seed corpora at run time (nothing is committed): token and decrypt seeds from
# Vectors/ and the shared Apple vectors, CMS seeds from their decoded signatures, payload seeds from
# the samples below and the Apple vectors' expected plaintexts.
# Usage: make-seeds.py OUT_DIR REPO_ROOT APPLE_VECTORS_DIR   (writes OUT_DIR/{token,cms,payload,decrypt}/)
import base64, glob, hashlib, json, os, sys

out, root, apple = sys.argv[1], sys.argv[2], sys.argv[3]
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

print(" ".join(f"{name}={counts.get(name, 0)}" for name in ("token", "cms", "payload", "decrypt")))
