#!/usr/bin/env bash
# The JVM binding's overhead (issue 42): `Benchmarks/jvm/run.sh [TOKENS] [PAIRS] [LANES]` mints TOKENS tokens
# (2,000), then runs the C ABI from C (bench.c) and the binding from Java (Bench.java, on the linux-x86_64
# jar Sources/java/build.sh made) PAIRS times each (8), alternating C and Java so that both see the same
# machine, each process timing 2 rounds after its warm-up. Prints the medians: one token at a time
# (ap_decrypt vs Decryptor.decrypt), the batch lanes (ap_decrypt_batch vs decryptBatch, LANES lanes, 0 = one
# per processor) and a token rejected at once (the per-call floor), the batch ratio and the per-call
# overhead in microseconds. Run it niced on a quiet machine; it reuses .build/release's library and mint-tokens.
set -euo pipefail
cd "$(dirname "$0")/../.."
tokens=${1:-2000} pairs=${2:-8} lanes=${3:-0}
version=$(tr -d ' \n' <.ci/VERSION)
jar=Sources/java/target/applepay-$version-linux-x86_64.jar
[ -f "$jar" ] || { echo "build the jar first: Sources/java/build.sh .build/release/libapplepay.so" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.build/release/mint-tokens "$work/minted" "$tokens" >/dev/null
cc -O2 -std=gnu11 -I Sources/ApplePayC/include Benchmarks/jvm/bench.c -L .build/release -lapplepay \
  -Wl,-rpath,"$PWD/.build/release" -o "$work/bench"
for ((i = 0; i < pairs; i++)); do
  "$work/bench" "$work/minted" 2 "$lanes"
  java -cp "$jar" Benchmarks/jvm/Bench.java "$work/minted" 2 "$lanes"
done >"$work/times"
python3 - "$work/times" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    side, mode, count, wall, cpu = line.split()
    runs.setdefault((side, mode), []).append((int(count), float(wall), float(cpu)))
def rate(side, mode, column):  # tokens/s, the median over the rounds
    return statistics.median(r[0] / r[column] for r in runs[(side, mode)])
def micros(side, mode, column):  # microseconds a token, the median
    return statistics.median(r[column] / r[0] * 1e6 for r in runs[(side, mode)])
print(f"{len(runs[('c', 'single')])} timed rounds a side, medians; wall clock, and CPU time (the thread's one token")
print("at a time, the process's for the batch: every lane, and the JVM's JIT and GC threads)")
for mode, what in [("single", "one token a call"), ("batch", "the batch lanes"), ("floor", "a token rejected at once")]:
    for column, clock in [(1, "wall"), (2, "CPU ")]:
        c, j = rate("c", mode, column), rate("java", mode, column)
        print(f"  {what:26} {clock}  C {c:9.0f}/s   Java {j:9.0f}/s   Java/C {j / c:.3f}")
for column, clock in [(1, "wall"), (2, "CPU")]:
    print(f"per-call overhead ({clock}): {micros('java', 'single', column) - micros('c', 'single', column):.2f} us on a token "
          f"that decrypts ({micros('c', 'single', column):.1f} us in C), "
          f"{micros('java', 'floor', column) - micros('c', 'floor', column):.2f} us on one rejected at once "
          f"({micros('c', 'floor', column):.2f} us in C)")
print(f"batch ratio: {rate('java', 'batch', 1) / rate('c', 'batch', 1):.3f} x the C ABI's tokens/s by wall clock, "
      f"{rate('java', 'batch', 2) / rate('c', 'batch', 2):.3f} x by CPU time")
PY
