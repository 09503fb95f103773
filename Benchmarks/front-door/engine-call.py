"""One Decryptor.decrypt_arrow call (lanes=1, unjudged, as the Spark job makes it) over the first N tokens of
DIR/tokens.jsonl (a `mint-tokens DIR COUNT` folder), R times; prints each call's process CPU seconds and how
many tokens were ok. Run it under `valgrind --tool=callgrind` at two sizes for instructions per token.
Usage: PYTHONPATH=TREE/Sources/python APPLEPAY_LIBRARY=TREE/.build/release/libapplepay.so \\
       python3 engine-call.py DIR N [R]"""
import sys
import time

import pyarrow as pa

import applepay

folder, count = sys.argv[1], int(sys.argv[2])
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 1


def read(name):
    with open(f"{folder}/{name}", "rb") as f:
        return f.read()


with open(f"{folder}/tokens.jsonl", "rb") as f:
    tokens = pa.array([line.rstrip(b"\n") for _, line in zip(range(count), f)], pa.binary())
merchant = applepay.Merchant.certificate(read("merchant.cert.pem"), read("merchant.key.pem"))
reference = 1772366460000  # 2026-03-01T12:01:00Z, in milliseconds
with applepay.Decryptor([merchant], insecure_test_root_pem=read("insecure-test-root.pem"),
                        reference_unit=applepay.REFERENCE_MILLISECONDS) as decryptor:
    for _ in range(rounds):
        started = time.process_time()
        columns = decryptor.decrypt_arrow(tokens, reference=reference, lanes=1, unjudged=True)
        ok = columns.codes.to_pylist().count(applepay.OK)
        columns.free()
        print(f"{time.process_time() - started:.3f} s, {ok} ok")
