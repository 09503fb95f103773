#!/usr/bin/env bash
# The Spark job's throughput on local[2] against the CLI with 2 lanes, at two sizes of freshly minted EC tokens
# (issues 18 and 34). At each size: the CLI's wall time, the job's wall time with the JVM start (the whole
# `python3 -m applepay.spark` process) and without it (the job's own "tokens in" line); once, a bare SparkSession's
# start, first job and stop. From the two sizes: the marginal tokens/s of each (further tokens over further wall
# time) and their ratio, and the job's fixed cost (its wall at the small size, less the bare session, less the
# small size's tokens at its marginal rate). One run of each; every output must equal the CLI's byte for byte.
# Two bare sessions are timed: the issue's (its one job runs in the JVM only) and one whose job starts Spark's
# Python workers and imports pyarrow in them (what any mapInArrow job pays before it runs a line of ours); the
# fixed cost is reported against each, the issue's definition first. Every figure carries the load average at
# the time (the machine may be shared: compare figures of one run). Not a timed test.
# Usage: Benchmarks/spark-throughput.sh [SMALL [LARGE]] (default 16000 400000).
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

load() { cut -d' ' -f1 /proc/loadavg; }

# A bare SparkSession on local[2]: JVM start, session, one job, stop. The job's fixed cost is measured beyond it.
# "jvm": the issue's baseline, a job in the JVM only; "python": the job maps two partitions through a Python
# function that imports pyarrow (Spark's Python daemon and workers started), as every mapInArrow job must.
bare_session() {
  python3 -c '
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[2]").appName("bare").getOrCreate()
if sys.argv[1] == "jvm":
    spark.range(1).count()
else:
    def identity(batches):
        import pyarrow
        yield from batches
    spark.range(0, 2, 1, 2).mapInArrow(identity, "id long").count()
spark.stop()' "$1" 2>"$work/bare-$1.log"
}
declare -A bare bare_load
for kind in jvm python; do
  bare_load[$kind]=$(load)
  start=$(now)
  bare_session "$kind"
  bare[$kind]=$(echo "$(now) - $start" | bc)
done

declare -A cli_wall job_wall job_only cli_load job_load
for count in "$small" "$large"; do
  .build/release/mint-tokens "$work/minted-$count" "$count" >/dev/null
  tokens=$work/minted-$count/tokens.jsonl
  merchant=cert=$work/minted-$count/merchant.cert.pem,key=$work/minted-$count/merchant.key.pem
  common=(--merchant "$merchant" --trust-root "$work/minted-$count/insecure-test-root.pem" --now 2026-03-01T12:01:00Z)

  cli_load[$count]=$(load)
  start=$(now)
  .build/release/applepay-decrypt batch "$tokens" --out "$work/cli.jsonl" --lanes 2 --quiet "${common[@]}" 2>"$work/cli.log"
  cli_wall[$count]=$(echo "$(now) - $start" | bc)

  job_load[$count]=$(load)
  start=$(now)
  python3 -m applepay.spark "$tokens" --out "$work/spark" --master 'local[2]' "${common[@]}" 2>"$work/spark.log"
  job_wall[$count]=$(echo "$(now) - $start" | bc)
  cat "$work"/spark/part-* | cmp - "$work/cli.jsonl" || { echo "the Spark job's output differs from the CLI's at $count tokens" >&2; exit 1; }
  job_only[$count]=$(sed -n 's/.*tokens in \([0-9.]*\) s.*/\1/p' "$work/spark.log" | tail -1)
  grep -o 'applepay.spark: timing.*' "$work/spark.log" | sed "s/^/  $count tokens: /" >&2 || true
  rm -rf "$work/spark" "$work/cli.jsonl" "$work/minted-$count"
done

echo "$(date -u +%Y-%m-%d) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//') ($(nproc) cores), pyspark $(python3 -c 'import pyspark; print(pyspark.__version__)'), $(java -version 2>&1 | head -1)"
printf '%-10s %12s %22s %26s  %s\n' tokens "CLI, 2 lanes" "Spark job, jobs only" "Spark job, with JVM start" "load (CLI, job)"
for count in "$small" "$large"; do
  printf '%-10s %6.2f s %5.0f/s %8.2f s %7.0f/s %10.2f s %7.0f/s  %s, %s\n' "$count" \
    "${cli_wall[$count]}" "$(echo "$count / ${cli_wall[$count]}" | bc -l)" \
    "${job_only[$count]}" "$(echo "$count / ${job_only[$count]}" | bc -l)" \
    "${job_wall[$count]}" "$(echo "$count / ${job_wall[$count]}" | bc -l)" "${cli_load[$count]}" "${job_load[$count]}"
done
extra=$((large - small))
cli_margin=$(echo "$extra / (${cli_wall[$large]} - ${cli_wall[$small]})" | bc -l)
job_margin=$(echo "$extra / (${job_wall[$large]} - ${job_wall[$small]})" | bc -l)
fixed=$(echo "${job_wall[$small]} - ${bare[jvm]} - $small / $job_margin" | bc -l)
fixed_python=$(echo "${job_wall[$small]} - ${bare[python]} - $small / $job_margin" | bc -l)
printf 'marginal tokens/s from %d to %d tokens: CLI %.0f, Spark job %.0f: %.2f x the CLI (target >= 0.9)\n' \
  "$small" "$large" "$cli_margin" "$job_margin" "$(echo "$job_margin / $cli_margin" | bc -l)"
printf 'bare SparkSession (start, first job in the JVM, stop): %.2f s (load %s); the job'"'"'s fixed cost beyond it: %.2f s (target <= 2)\n' \
  "${bare[jvm]}" "${bare_load[jvm]}" "$fixed"
printf 'bare SparkSession whose first job starts Python workers with pyarrow: %.2f s (load %s); the job'"'"'s fixed cost beyond it: %.2f s\n' \
  "${bare[python]}" "${bare_load[python]}" "$fixed_python"
