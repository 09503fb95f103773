#!/usr/bin/env bash
# Load run, not a timed test: the batch CLI's tokens/s, then the service's tokens/s with p50/p99 under
# wrk on loopback, measured in the same run on the same freshly minted tokens (release builds).
# Usage: Benchmarks/Service/load.sh [SECONDS] [CONNECTIONS...]   (default: 10 4 16)
# Every step is bounded in time; the whole run takes about a minute once the builds are done.
set -euo pipefail
bench=$(cd "$(dirname "$0")" && pwd)
cd "$bench/../../Sources/Server"  # the service package
seconds=${1:-10}
shift || true
connections=(4 16)
[ "$#" -gt 0 ] && connections=("$@")
repo=$(cd ../.. && pwd)
if ! command -v wrk >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get install -y -qq wrk >/dev/null || { timeout 600 apt-get update -qq && timeout 600 apt-get install -y -qq wrk >/dev/null; }
fi

timeout 3600 swift build -c release --product applepay-service >/dev/null
(cd "$repo" && timeout 1800 swift build -c release --product applepay-decrypt >/dev/null)
(cd "$repo" && timeout 1800 swift build -c release --product mint-tokens >/dev/null)
bin=$(swift build -c release --show-bin-path)
cli=$(cd "$repo" && swift build -c release --show-bin-path)/applepay-decrypt
mint=$(cd "$repo" && swift build -c release --show-bin-path)/mint-tokens

cores=$(nproc)
# Enough unique tokens that no run cycles back to a token already claimed (a cycled token would be a
# replayedTransaction: fully verified and decrypted all the same, but not a 200).
count=$(( seconds * 12000 ))
source "$bench/minted-tokens.sh"
mint_tokens load "$count"

echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  cores: $cores  tokens minted: $count  load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, before the run)"

# The batch CLI on the same tokens (its own in-process replay ledger), all cores.
# Its CPU (user+sys, all threads) comes from bash's `time`, the service's from /proc/PID/stat around
# the wrk run: the CPU-per-token ratio is the figure that holds on a shared machine.
TIMEFORMAT='%U %S'
cli_cpu=$( { time timeout 600 "$cli" batch "$work/tokens.jsonl" --out "$work/cli.jsonl" --lanes "$cores" --quiet "${keys[@]}" 2>"$work/cli.err"; } 2>&1 )
cli_out=$(tail -1 "$work/cli.err")
cli_rate=$(printf '%s' "$cli_out" | sed -n 's/.*(\([0-9]*\) tokens\/s.*/\1/p')
cli_us=$(python3 -c "u, s = map(float, '$cli_cpu'.split()); print(f'{(u + s) / $count * 1e6:.0f}')")
echo "batch CLI: $cli_rate tokens/s, $cli_us µs CPU/token   ($cli_out)"
tick=$(getconf CLK_TCK)

# The service, one fresh instance per load level (so every level starts with unclaimed tokens); wrk
# with one thread shares the same cores, as a co-located authorizer's client would.
for c in "${connections[@]}"; do
  "$bin/applepay-service" --listen 127.0.0.1:0 "${keys[@]}" --lanes "$cores" --log-level warning \
    </dev/null >"$work/service.out" 2>"$work/service.err" &
  service_pid=$!
  for _ in $(seq 300); do grep -q 'listening on' "$work/service.out" && break; sleep 0.1; done
  port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/service.out")
  [ -n "$port" ] || { cat "$work/service.err" >&2; exit 1; }
  cpu0=$(awk '{ print $14 + $15 }' "/proc/$service_pid/stat")
  result=$(timeout $((seconds + 60)) wrk -t1 -c"$c" -d"${seconds}s" --timeout 10s --latency -s "$bench/post-token.lua" \
    "http://127.0.0.1:$port" -- "$work/tokens.jsonl" 1 | grep '^RESULT')
  cpu1=$(awk '{ print $14 + $15 }' "/proc/$service_pid/stat")
  kill -TERM "$service_pid"
  wait "$service_pid" || true
  service_pid=""
  rps=$(printf '%s' "$result" | sed -n 's/.* rps=\([0-9]*\).*/\1/p')
  requests=$(printf '%s' "$result" | sed -n 's/.*requests=\([0-9]*\).*/\1/p')
  service_us=$(python3 -c "print(f'{($cpu1 - $cpu0) / $tick / max(1, $requests) * 1e6:.0f}')")
  echo "service:   $rps tokens/s over HTTP, wrk -t1 -c$c -d${seconds}s, service / CLI = $(python3 -c "print(f'{$rps / max(1, ${cli_rate:-0}):.2f}')");" \
       "$service_us µs CPU/token = $(python3 -c "print(f'{$service_us / max(1, $cli_us):.2f}')") × the CLI's   ($result)"
done
