#!/usr/bin/env python3
"""The side-by-side: PyPI google-pay-token-decryption over the tokens `applepay-bench --google-export DIR` wrote
(the same tokens the engine was measured on, in the same run of that command), on one thread.

  python3 -m venv /tmp/gpvenv && /tmp/gpvenv/bin/pip install google-pay-token-decryption
  swift run -c release --package-path Benchmarks applepay-bench --google-export /tmp/gp
  /tmp/gpvenv/bin/python Benchmarks/google-pay-pypi.py /tmp/gp

Prints tokens/s (median of 5 runs of `--seconds` each) and checks every token decrypts to a payment.
"""
import base64
import json
import sys
import time

from cryptography.hazmat.primitives import serialization
from google_pay_token_decryption import GooglePayTokenDecryptor


def main() -> None:
    folder = sys.argv[1]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--seconds" else 3.0
    with open(f"{folder}/merchant_key.pem", "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    der = key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    with open(f"{folder}/root_keys.json") as f:
        roots = json.load(f)["keys"]
    with open(f"{folder}/recipient_id.txt") as f:
        recipient = f.read().strip()
    with open(f"{folder}/tokens.jsonl") as f:
        tokens = [json.loads(line) for line in f if line.strip()]
    decryptor = GooglePayTokenDecryptor(roots, recipient, base64.b64encode(der).decode())
    for token in tokens:  # every token must decrypt (and warms up)
        assert "paymentMethodDetails" in decryptor.decrypt_token(token)
    rates = []
    for _ in range(5):
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / 5:
            for token in tokens[:256]:
                decryptor.decrypt_token(token)
            done += min(256, len(tokens))
        rates.append(done / (time.perf_counter() - start))
    rates.sort()
    print(f"google-pay-token-decryption {len(tokens)} tokens: {rates[2]:.0f} tokens/s (range {rates[0]:.0f}-{rates[-1]:.0f}), one thread")


if __name__ == "__main__":
    main()
