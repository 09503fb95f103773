#!/usr/bin/env bash
# The packaged CLI (.ci/dist's self-contained bin/applepay-decrypt) against the ordinary release build,
# interleaved, 1 and 2 lanes, over fresh factory tokens; each figure is one process from exec to exit,
# median of ROUNDS (round 0 warms the page cache and is not counted). Outputs must be byte-identical.
# Usage (from the repository root, after `swift build -c release --product applepay-decrypt --product
# mint-tokens` and `.ci/dist DIR`, the tarball extracted):
#   Benchmarks/packaged-cli.sh PACKAGED_CLI [TOKENS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
packaged=$(readlink -f "$1") tokens="${2:-20000}" rounds="${3:-5}"
ordinary=.build/release/applepay-decrypt
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
.build/release/mint-tokens "$work" "$tokens" >/dev/null
options=(--merchant "cert=$work/merchant.cert.pem,key=$work/merchant.key.pem" --trust-root "$work/insecure-test-root.pem"
         --now 2026-03-01T12:00:30Z --quiet)
declare -A times
for round in $(seq 0 "$rounds"); do
  for lanes in 1 2; do
    for build in ordinary packaged; do
      cli=$ordinary; [ "$build" = packaged ] && cli=$packaged
      rm -f "$work/out-$build.jsonl"
      start=$(date +%s.%N)
      "$cli" batch "$work/tokens.jsonl" --out "$work/out-$build.jsonl" --lanes "$lanes" "${options[@]}" 2>/dev/null
      end=$(date +%s.%N)
      [ "$round" -gt 0 ] && times[$build-$lanes]+="$(echo "$end - $start" | bc) "
    done
    cmp -s "$work/out-ordinary.jsonl" "$work/out-packaged.jsonl" || { echo "the two builds' outputs differ" >&2; exit 1; }
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-9s %5s %10s %12s\n' build lanes seconds tokens/s
for lanes in 1 2; do
  for build in ordinary packaged; do
    m=$(echo "${times[$build-$lanes]}" | median)
    printf '%-9s %5d %10.3f %12.0f\n' "$build" "$lanes" "$m" "$(echo "$tokens / $m" | bc -l)"
  done
done
