#!/usr/bin/env bash
# The Spark job's throughput on local[2] against the CLI with 2 lanes, at two sizes of freshly minted EC tokens
# (issues 18 and 34). At each size: the CLI's wall time, the job's wall time with the JVM start (the whole
# `python3 -m applepay.spark` process) and without it (the job's own "tokens in" line); once, a bare SparkSession's
# start, first job and stop. From the two sizes: the marginal tokens/s of each (further tokens over further wall
# time) and their ratio, and the job's fixed cost (its wall at the small size, less the bare session, less the
# small size's tokens at its marginal rate). One run of each; every output must equal the CLI's byte for byte.
# Not a timed test. Usage: Benchmarks/spark-throughput.sh [SMALL [LARGE]] (default 16000 400000).
# Needs pyspark, pyarrow, pandas and Java 17 (see .ci/run). APPLEPAY_SPARK_TIMING=1 prints the job's stage times.
set -euo pipefail
cd "$(dirname "$0")/.."
small=${1:-16000}
large=${2:-400000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 700 "$work"

for product in applepay applepay-decrypt mint-tokens; do swift build -c release --product "$product" >/dev/null; done
export APPLEPAY_LIBRARY=$PWD/.build/release/libapplepay.so PYTHONPATH=$PWD/Sources/python SPARK_LOCAL_IP=127.0.0.1
now() { date +%s.%N; }

# A bare SparkSession on local[2]: JVM start, session, one job, stop. The job's fixed cost is measured beyond it.
start=$(now)
python3 -c '
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[2]").appName("bare").getOrCreate()
spark.range(1).count()
spark.stop()' 2>"$work/bare.log"
bare=$(echo "$(now) - $start" | bc)

declare -A cli_wall job_wall job_only
for count in "$small" "$large"; do
  .build/release/mint-tokens "$work/minted-$count" "$count" >/dev/null
  tokens=$work/minted-$count/tokens.jsonl
  merchant=cert=$work/minted-$count/merchant.cert.pem,key=$work/minted-$count/merchant.key.pem
  common=(--merchant "$merchant" --trust-root "$work/minted-$count/insecure-test-root.pem" --now 2026-03-01T12:01:00Z)

  start=$(now)
  .build/release/applepay-decrypt batch "$tokens" --out "$work/cli.jsonl" --lanes 2 --quiet "${common[@]}" 2>"$work/cli.log"
  cli_wall[$count]=$(echo "$(now) - $start" | bc)

  start=$(now)
  python3 -m applepay.spark "$tokens" --out "$work/spark" --master 'local[2]' "${common[@]}" 2>"$work/spark.log"
  job_wall[$count]=$(echo "$(now) - $start" | bc)
  cat "$work"/spark/part-* | cmp - "$work/cli.jsonl" || { echo "the Spark job's output differs from the CLI's at $count tokens" >&2; exit 1; }
  job_only[$count]=$(sed -n 's/.*tokens in \([0-9.]*\) s.*/\1/p' "$work/spark.log" | tail -1)
  grep -o 'applepay.spark: timing.*' "$work/spark.log" | sed "s/^/  $count tokens: /" >&2 || true
  rm -rf "$work/spark" "$work/cli.jsonl" "$work/minted-$count"
done

echo "$(date -u +%Y-%m-%d) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//') ($(nproc) cores), pyspark $(python3 -c 'import pyspark; print(pyspark.__version__)'), $(java -version 2>&1 | head -1)"
printf '%-10s %12s %22s %26s\n' tokens "CLI, 2 lanes" "Spark job, jobs only" "Spark job, with JVM start"
for count in "$small" "$large"; do
  printf '%-10s %6.2f s %5.0f/s %8.2f s %7.0f/s %10.2f s %7.0f/s\n' "$count" \
    "${cli_wall[$count]}" "$(echo "$count / ${cli_wall[$count]}" | bc -l)" \
    "${job_only[$count]}" "$(echo "$count / ${job_only[$count]}" | bc -l)" \
    "${job_wall[$count]}" "$(echo "$count / ${job_wall[$count]}" | bc -l)"
done
extra=$((large - small))
cli_margin=$(echo "$extra / (${cli_wall[$large]} - ${cli_wall[$small]})" | bc -l)
job_margin=$(echo "$extra / (${job_wall[$large]} - ${job_wall[$small]})" | bc -l)
fixed=$(echo "${job_wall[$small]} - $bare - $small / $job_margin" | bc -l)
printf 'marginal tokens/s from %d to %d tokens: CLI %.0f, Spark job %.0f: %.2f x the CLI (target >= 0.9)\n' \
  "$small" "$large" "$cli_margin" "$job_margin" "$(echo "$job_margin / $cli_margin" | bc -l)"
printf 'bare SparkSession (start, first job, stop): %.2f s; the job'"'"'s fixed cost beyond it: %.2f s (target <= 2)\n' "$bare" "$fixed"
