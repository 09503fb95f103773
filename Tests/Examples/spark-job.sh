#!/usr/bin/env bash
# The Spark article's job example (Spark.md), run by .ci/run's Spark step (pyspark, Java, and the release
# libapplepay.so the C ABI step built): the article's ```sh block is a run of lines of this file. Its output
# must be byte for byte what applepay-decrypt batch writes.
set -euo pipefail
cd "$(dirname "$0")/../.."
cli=${APPLEPAY_CLI:-$PWD/.build/debug/applepay-decrypt}
export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-127.0.0.1}

out=$(mktemp -d)  # the output is card data: keep it out of the checkout
PYTHONPATH=Sources/python APPLEPAY_LIBRARY=$PWD/.build/release/libapplepay.so \
  python3 -m applepay.spark Vectors/archive.jsonl --out "$out/results" \
    --merchant cert=Vectors/merchants/ec.cert.pem,key=Vectors/merchants/ec.key.pem \
    --merchant cert=Vectors/merchants/rsa.cert.pem,key=Vectors/merchants/rsa.key.pem \
    --trust-root Vectors/trust/test-root.pem --now 2026-03-01T12:01:00Z --master 'local[2]'
cat "$out"/results/part-* > "$out/spark.jsonl"

"$cli" batch Vectors/archive.jsonl --out "$out/cli.jsonl" --quiet \
  --merchant cert=Vectors/merchants/ec.cert.pem,key=Vectors/merchants/ec.key.pem \
  --merchant cert=Vectors/merchants/rsa.cert.pem,key=Vectors/merchants/rsa.key.pem \
  --trust-root Vectors/trust/test-root.pem --now 2026-03-01T12:01:00Z
cmp "$out/spark.jsonl" "$out/cli.jsonl"

PYTHONPATH=Sources/python APPLEPAY_LIBRARY=$PWD/.build/release/libapplepay.so \
  python3 Tests/Examples/spark_library.py "$out/payments"
rm -rf "$out"
echo "Spark examples: the job's output equals the CLI's byte for byte; the library example wrote its payments"
