#!/usr/bin/env bash
# Issue 42 item 5, "measure, then decide": a Spark job whose executors call the engine through the JNI binding
# (Benchmarks/spark-jni/JniJob.java) against today's Python job (python3 -m applepay.spark), on the SAME minted
# archive, interleaved (Python, JNI, Python, JNI, ...: ROUNDS of each) at two sizes, on local[2].
# Usage: Benchmarks/spark-jni/run.sh [SMALL [LARGE [ROUNDS]]] (default 16000 64000 2).
# Per run: wall seconds, CPU seconds (user+sys of the process and all its descendants, cpu-time.py: a subreaper) and the
# 1-minute load average before it; then, from the medians, the marginal tokens/s and the fixed cost of each job,
# by wall clock and by CPU. The JNI job does not judge replays across batches or partitions and its lines are
# not promised byte-identical to the CLI; the script reports whether its output equals the Python job's byte for byte.
# Needs: .build/release's libapplepay.so and mint-tokens, pyspark (its bundled jars), javac 17, maven (the jar).
# A benchmark: not in .ci/run. Runs everything under `nice -n 10`.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
small=${1:-16000} large=${2:-64000} rounds=${3:-2}
lib=$root/.build/release/libapplepay.so
mint=$root/.build/release/mint-tokens
[ -f "$lib" ] && [ -x "$mint" ] || { echo "build first: swift build -c release --product applepay; swift build -c release --product mint-tokens" >&2; exit 1; }
version=$(tr -d ' \n' <.ci/VERSION)
jar=$root/Sources/java/target/applepay-$version-linux-x86_64.jar
[ -f "$jar" ] || nice -n 10 Sources/java/build.sh "$lib" package -DskipTests
sparkjars=$(python3 -c 'import pyspark,os;print(os.path.dirname(pyspark.__file__))')/jars
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 700 "$work"
mkdir "$work/classes"
javac --release 17 -nowarn -cp "$sparkjars/*:$jar" -d "$work/classes" Benchmarks/spark-jni/JniJob.java
jar cf "$work/jni-job.jar" -C "$work/classes" .
export APPLEPAY_LIBRARY=$lib PYTHONPATH=$root/Sources/python SPARK_LOCAL_IP=127.0.0.1
now=2026-03-01T12:01:00Z

# timed KIND COUNT ROUND COMMAND...: one run, its wall and CPU seconds and the load before it, into $work/times
timed() {
  local kind=$1 count=$2 round=$3
  shift 3
  local load start wall cpu
  load=$(cut -d' ' -f1 /proc/loadavg)
  start=$(date +%s.%N)
  nice -n 10 python3 Benchmarks/spark-jni/cpu-time.py "$work/rusage" "$@" 2>"$work/$kind.log" >/dev/null || { cat "$work/$kind.log" >&2; exit 1; }
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  cpu=$(cat "$work/rusage")
  echo "$kind $count $round $wall $cpu $load" | tee -a "$work/times" >&2
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//') ($(nproc) cores), pyspark $(python3 -c 'import pyspark; print(pyspark.__version__)'), $(java -version 2>&1 | head -1)" >&2
echo "# uptime before: $(uptime)" >&2
for count in "$small" "$large"; do
  "$mint" "$work/minted-$count" "$count" >/dev/null
  tokens=$work/minted-$count/tokens.jsonl
  merchant=cert=$work/minted-$count/merchant.cert.pem,key=$work/minted-$count/merchant.key.pem
  trust=$work/minted-$count/insecure-test-root.pem
  for ((round = 1; round <= rounds; round++)); do
    rm -rf "$work/py-out" "$work/jni-out"
    timed python "$count" "$round" python3 -m applepay.spark "$tokens" --out "$work/py-out" --master 'local[2]' \
      --merchant "$merchant" --trust-root "$trust" --now "$now"
    timed jni "$count" "$round" spark-submit --master 'local[2]' --driver-memory 1g --jars "$jar" --class JniJob \
      "$work/jni-job.jar" "$tokens" "$work/jni-out" "$merchant" "$trust" "$now" 2 4096
    grep -h 'JniJob:' "$work/jni.log" >&2 || true
  done
  py_lines=$(cat "$work"/py-out/part-* | wc -l) jni_lines=$(cat "$work"/jni-out/part-* | wc -l)
  if cat "$work"/py-out/part-* | cmp -s - <(cat "$work"/jni-out/part-*); then same=identical; else same=different; fi
  echo "# $count tokens: Python job $py_lines lines, JNI job $jni_lines lines; outputs (part files in order) byte for byte $same" >&2
  rm -rf "$work/minted-$count"
done
echo "# uptime after: $(uptime)" >&2

python3 - "$work/times" "$small" "$large" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    kind, count, _, wall, cpu, load = line.split()
    runs.setdefault((kind, int(count)), []).append((float(wall), float(cpu), float(load)))
small, large = int(sys.argv[2]), int(sys.argv[3])
med = lambda kind, count, column: statistics.median(r[column] for r in runs[(kind, count)])
print(f"{'job':8} {'tokens':>7} {'wall s (runs)':>24} {'CPU s (runs)':>24} {'load before':>16}")
for kind in ("python", "jni"):
    for count in (small, large):
        rs = runs[(kind, count)]
        print(f"{kind:8} {count:7d} {', '.join(f'{r[0]:.1f}' for r in rs):>24} {', '.join(f'{r[1]:.1f}' for r in rs):>24}"
              f" {', '.join(f'{r[2]:.1f}' for r in rs):>16}")
print("medians; marginal = further tokens / further seconds from the small to the large size; fixed = the small"
      " size's seconds less its tokens at the marginal rate")
for kind in ("python", "jni"):
    out = []
    for column, clock in ((0, "wall"), (1, "CPU")):
        a, b = med(kind, small, column), med(kind, large, column)
        margin = (large - small) / (b - a)
        out.append(f"{clock}: {margin:.0f} tokens/s marginal, fixed {a - small / margin:.1f} s")
    print(f"{kind:8} " + "; ".join(out))
PY
