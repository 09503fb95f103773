#!/usr/bin/env bash
# Sharded batch against one unsharded run (issue 18): mints N fresh EC_v1 tokens (default 16,000),
# then, ROUNDS times (default 3), runs the unsharded batch, the 4 shards one after another and the
# merge, every process on 1 lane, interleaved so that both sides see the same machine load. Prints
# each round and the medians: slowest shard / unsharded (target <= 0.30) and merge / unsharded
# (target <= 0.05), and checks that the merge equals the unsharded output byte for byte.
# Usage: Benchmarks/shard-scaling.sh [TOKENS] [ROUNDS]   (CONFIG=debug to measure a debug build)
set -euo pipefail
cd "$(dirname "$0")/.."
tokens=${1:-16000}
rounds=${2:-3}
config=${CONFIG:-release}
swift build -c "$config" --product applepay-decrypt >/dev/null 2>&1
# Minting is not measured: a debug build of the token factory will do.
swift build --product mint-tokens >/dev/null 2>&1
cli=.build/$config/applepay-decrypt
work=$(mktemp -d)
cpu_file=$(mktemp)
trap 'rm -rf "$work" "$cpu_file"' EXIT
.build/debug/mint-tokens "$work" "$tokens"
options=(--merchant "cert=$work/merchant.cert.pem,key=$work/merchant.key.pem" --trust-root "$work/insecure-test-root.pem"
         --now 2026-03-01T12:01:00Z --lanes 1 --quiet)

now() { date +%s.%N; }
# Seconds taken by one command (its output discarded): wall time, and in cpu_seconds its CPU time
# (user + system), which a busy machine inflates far less than wall time (one lane: one busy thread).
timed() {
  local start TIMEFORMAT='%U %S'
  start=$(now)
  { time "$@" 2>/dev/null; } 2>"$cpu_file"
  echo "$(now) - $start" | bc -l
}
cpu_seconds() { awk '{ print $1 + $2 }' "$cpu_file"; }

echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')  cores: $(nproc)"
echo "build: $config  tokens: $tokens  rounds: $rounds  load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %10s %8s %8s %8s %8s %8s %12s %10s\n' round unsharded shard1 shard2 shard3 shard4 merge slowest/one merge/one
declare -a ones slowests merges cpu_ones cpu_slowests cpu_merges
for round in $(seq "$rounds"); do
  rm -f "$work"/whole.jsonl* "$work"/part* "$work"/merged.jsonl*
  one=$(timed "$cli" batch "$work/tokens.jsonl" --out "$work/whole.jsonl" "${options[@]}"); cpu_one=$(cpu_seconds)
  shard=() cpu_shard=()
  for k in 1 2 3 4; do
    shard+=("$(timed "$cli" batch "$work/tokens.jsonl" --shard "$k/4" --out "$work/part$k.jsonl" "${options[@]}")")
    cpu_shard+=("$(cpu_seconds)")
  done
  merge=$(timed "$cli" merge "$work"/part{3,1,4,2}.jsonl --out "$work/merged.jsonl"); cpu_merge=$(cpu_seconds)
  cpu_ones+=("$cpu_one"); cpu_merges+=("$cpu_merge")
  cpu_slowests+=("$(printf '%s\n' "${cpu_shard[@]}" | sort -g | tail -1)")
  cmp -s "$work/merged.jsonl" "$work/whole.jsonl" || { echo "the merge differs from the unsharded output" >&2; exit 1; }
  slowest=$(printf '%s\n' "${shard[@]}" | sort -g | tail -1)
  ones+=("$one"); slowests+=("$slowest"); merges+=("$merge")
  printf '%-6s %10.3f %8.3f %8.3f %8.3f %8.3f %8.3f %12.3f %10.3f\n' "$round" "$one" "${shard[@]}" "$merge" \
    "$(echo "$slowest / $one" | bc -l)" "$(echo "$merge / $one" | bc -l)"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
one=$(median "${ones[@]}"); slowest=$(median "${slowests[@]}"); merge=$(median "${merges[@]}")
echo "median: unsharded $one s, slowest shard $slowest s, merge $merge s"
printf 'slowest shard / unsharded = %.3f (target <= 0.30)\nmerge / unsharded = %.3f (target <= 0.05)\n' \
  "$(echo "$slowest / $one" | bc -l)" "$(echo "$merge / $one" | bc -l)"
one=$(median "${cpu_ones[@]}"); slowest=$(median "${cpu_slowests[@]}"); merge=$(median "${cpu_merges[@]}")
echo "CPU time (user + system), medians: unsharded $one s, slowest shard $slowest s, merge $merge s"
printf 'CPU: slowest shard / unsharded = %.3f, merge / unsharded = %.3f\n' "$(echo "$slowest / $one" | bc -l)" "$(echo "$merge / $one" | bc -l)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
