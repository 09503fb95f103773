#!/usr/bin/env bash
# The Spark job's tokens/s on local[2] against the CLI with 2 lanes, on the same freshly minted EC tokens
# (issue 18 item 6). One run of each; the outputs must be byte-identical. Not a timed test.
# Usage: Benchmarks/spark-throughput.sh [COUNT] (default 16000). Needs pyspark and Java 17 (see .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-16000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 700 "$work"

for product in applepay applepay-decrypt mint-tokens; do swift build -c release --product "$product" >/dev/null; done
.build/release/mint-tokens "$work/minted" "$count" >/dev/null
tokens=$work/minted/tokens.jsonl
merchant=cert=$work/minted/merchant.cert.pem,key=$work/minted/merchant.key.pem
common=(--merchant "$merchant" --trust-root "$work/minted/insecure-test-root.pem" --now 2026-03-01T12:01:00Z)

now() { date +%s.%N; }
start=$(now)
.build/release/applepay-decrypt batch "$tokens" --out "$work/cli.jsonl" --lanes 2 --quiet "${common[@]}" 2>"$work/cli.log"
cli_wall=$(echo "$(now) - $start" | bc)

start=$(now)
APPLEPAY_LIBRARY=$PWD/.build/release/libapplepay.so PYTHONPATH=Sources/python \
  python3 -m applepay.spark "$tokens" --out "$work/spark" --master 'local[2]' "${common[@]}" \
  2>"$work/spark.log"
spark_wall=$(echo "$(now) - $start" | bc)
cat "$work"/spark/part-* | cmp - "$work/cli.jsonl" || { echo "the Spark job's output differs from the CLI's" >&2; exit 1; }
spark_job=$(sed -n 's/.*tokens in \([0-9.]*\) s.*/\1/p' "$work/spark.log" | tail -1)

echo "$(date -u +%Y-%m-%d) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//') ($(nproc) cores), $count tokens"
printf '%-42s %8s %10s\n' run seconds tokens/s
printf '%-42s %8.2f %10.0f\n' "CLI batch, 2 lanes" "$cli_wall" "$(echo "$count / $cli_wall" | bc -l)"
printf '%-42s %8.2f %10.0f\n' "Spark job, local[2], jobs only" "$spark_job" "$(echo "$count / $spark_job" | bc -l)"
printf '%-42s %8.2f %10.0f\n' "Spark job, local[2], with JVM start" "$spark_wall" "$(echo "$count / $spark_wall" | bc -l)"
