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
rates = {}
for line in open(sys.argv[1]):
    side, mode, count, seconds = line.split()
    rates.setdefault((side, mode), []).append((int(count), float(seconds)))
def median(side, mode):
    return statistics.median(c / s for c, s in rates[(side, mode)])
def micros(side, mode):
    return statistics.median(s / c * 1e6 for c, s in rates[(side, mode)])
n = len(rates[("c", "single")])
print(f"{n} timed rounds a side; tokens/s, medians")
for mode, what in [("single", "one token a call"), ("batch", "the batch lanes"), ("floor", "a token rejected at once")]:
    c, j = median("c", mode), median("java", mode)
    print(f"  {what:26} C {c:10.0f}   Java {j:10.0f}   Java/C {j / c:.3f}")
print(f"per-call overhead: {micros('java', 'single') - micros('c', 'single'):.2f} us on a token that decrypts "
      f"({micros('c', 'single'):.1f} us in C), {micros('java', 'floor') - micros('c', 'floor'):.2f} us on one rejected at once "
      f"({micros('c', 'floor'):.2f} us in C)")
print(f"batch ratio: {median('java', 'batch') / median('c', 'batch'):.3f} x the C ABI's tokens/s")
PY
