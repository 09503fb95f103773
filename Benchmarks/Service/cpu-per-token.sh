#!/usr/bin/env bash
# CPU per token, a figure that holds on a shared machine (throughput does not): the service's own
# user+sys CPU time (/proc/PID/stat, all threads) over a fixed wrk run, divided by the requests
# served, with the context switches per request. (Instruction counts would be steadier still, but this
# VM exposes no hardware counters to perf, and valgrind 3.19 crashes on the Swift 6.3 runtime.)
# Usage: Benchmarks/Service/cpu-per-token.sh [SECONDS] [CONNECTIONS]   (default 10 4)
# SERVICE=PATH measures that applepay-service binary instead of this package's release build (A/B).
set -euo pipefail
bench=$(cd "$(dirname "$0")" && pwd)
cd "$bench/../../Sources/Server"  # the service package
seconds=${1:-10}
connections=${2:-4}

[ -n "${SERVICE:-}" ] || timeout 3600 swift build -c release --product applepay-service >/dev/null
bin=$(swift build -c release --show-bin-path)
repo=$(cd ../.. && pwd)
(cd "$repo" && timeout 1800 swift build -c release --product mint-tokens >/dev/null)
mint=$(cd "$repo" && swift build -c release --show-bin-path)/mint-tokens
cores=$(nproc)
count=$(( seconds * 8000 + 100 ))
source "$bench/minted-tokens.sh"
mint_tokens cpu "$count"
tick=$(getconf CLK_TCK)

service=${SERVICE:-$bin/applepay-service}
start_service() { # [WRAPPER...]
  "$@" "$service" --listen 127.0.0.1:0 "${keys[@]}" --lanes "$cores" --log-level warning \
    </dev/null >"$work/service.out" 2>"$work/service.err" &
  service_pid=$!
  for _ in $(seq 1200); do grep -q 'listening on' "$work/service.out" && break; sleep 0.1; done
  port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/service.out")
  [ -n "$port" ] || { cat "$work/service.err" >&2; exit 1; }
}
stop_service() {
  kill -TERM "$service_pid"
  wait "$service_pid" || true
  service_pid=""
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$service_pid/stat"; }
switches() { cat /proc/"$service_pid"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n }'; }

echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  cores: $cores  load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, before the run)"
start_service
# A short warm-up on the first tokens (not counted), then the measured run on the rest.
head -n 100 "$work/tokens.jsonl" >"$work/warm.jsonl"
tail -n +101 "$work/tokens.jsonl" >"$work/run.jsonl"
timeout 60 wrk -t1 -c1 -d1s -s "$bench/post-token.lua" "http://127.0.0.1:$port" -- "$work/warm.jsonl" 1 >/dev/null
cpu0=$(cpu_ticks); cs0=$(switches)
result=$(timeout $((seconds + 60)) wrk -t1 -c"$connections" -d"${seconds}s" --timeout 10s --latency -s "$bench/post-token.lua" \
  "http://127.0.0.1:$port" -- "$work/run.jsonl" 1 | grep '^RESULT')
cpu1=$(cpu_ticks); cs1=$(switches)
stop_service
requests=$(printf '%s' "$result" | sed -n 's/.*requests=\([0-9]*\).*/\1/p')
python3 - "$cpu0" "$cpu1" "$tick" "$requests" "$cs0" "$cs1" "$connections" "$seconds" "$result" <<'EOF'
import sys
c0, c1, tick, n, s0, s1 = (int(x) for x in sys.argv[1:7])
cpu = (c1 - c0) / tick
print(f"service CPU: {cpu:.2f} s user+sys over {n} requests = {cpu / max(n, 1) * 1e6:.0f} µs/token; "
      f"{(s1 - s0) / max(n, 1):.2f} context switches/request  (wrk -t1 -c{sys.argv[7]} -d{sys.argv[8]}s: {sys.argv[9]})")
EOF

