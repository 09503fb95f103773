#!/usr/bin/env bash
# CPU per token, a figure that holds on a shared machine (throughput does not): the service's own
# user+sys CPU time (/proc/PID/stat, all threads) over a fixed wrk run, divided by the requests
# served, with the context switches per request; then, with --instructions, the instructions per
# request under callgrind (one keep-alive connection, a fixed number of requests after a warm-up).
# Usage: Sources/applepay-service/Benchmark/cpu-per-token.sh [SECONDS] [CONNECTIONS] [--instructions N]
#        (default 10 4; the release builds must exist or are built first)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
connections=${2:-4}
instructions=0
[ "${3:-}" = "--instructions" ] && instructions=${4:-300}

timeout 3600 swift build -c release --product applepay-service >/dev/null
timeout 1800 swift build -c release --product mint-load-tokens >/dev/null
bin=$(swift build -c release --show-bin-path)
cores=$(nproc)
count=$(( seconds * 8000 + instructions + 100 ))
work=$(mktemp -d /tmp/applepay-cpu.XXXXXX)
service_pid=""
cleanup() {
  if [ -n "$service_pid" ]; then kill "$service_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
timeout 600 "$bin/mint-load-tokens" "$work" "$count"
keys=(--merchant "cert=$work/merchant.cert.pem,key=$work/merchant.key.pem" --trust-root "$work/root.pem" --window 3600)
tick=$(getconf CLK_TCK)

start_service() { # [WRAPPER...]
  "$@" "$bin/applepay-service" --listen 127.0.0.1:0 "${keys[@]}" --lanes "$cores" --log-level warning \
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
timeout 60 wrk -t1 -c1 -d1s -s Benchmark/post-token.lua "http://127.0.0.1:$port" -- "$work/warm.jsonl" 1 >/dev/null
cpu0=$(cpu_ticks); cs0=$(switches)
result=$(timeout $((seconds + 60)) wrk -t1 -c"$connections" -d"${seconds}s" --timeout 10s --latency -s Benchmark/post-token.lua \
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

[ "$instructions" -gt 0 ] || exit 0
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
tail -n "$((instructions + 50))" "$work/tokens.jsonl" >"$work/cg.jsonl"
start_service valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/callgrind.out" --dump-instr=no
post() { # FIRST COUNT: COUNT requests on one keep-alive connection, from line FIRST
  python3 - "$port" "$work/cg.jsonl" "$1" "$2" <<'EOF'
import http.client, sys
port, path, first, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lines = open(path, 'rb').read().splitlines()[first:first + count]
conn = http.client.HTTPConnection('127.0.0.1', port, timeout=120)
bad = 0
for line in lines:
    conn.request('POST', '/v1/decrypt', body=line, headers={'Content-Type': 'application/json'})
    r = conn.getresponse(); r.read()
    bad += r.status != 200
if bad: sys.exit(f"{bad} of {len(lines)} answers were not 200")
EOF
}
post 0 50
callgrind_control -i on "$service_pid" >/dev/null
post 50 "$instructions"
callgrind_control -d "$service_pid" >/dev/null
callgrind_control -i off "$service_pid" >/dev/null
stop_service
out=$(ls "$work"/callgrind.out* | sort | head -1)
total=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
echo "service instructions (callgrind): $total over $instructions requests = $(( total / instructions )) per token (one keep-alive connection)"
if [ -n "${CALLGRIND_KEEP:-}" ]; then cp "$out" "$CALLGRIND_KEEP"; echo "profile kept in $CALLGRIND_KEEP"; fi
