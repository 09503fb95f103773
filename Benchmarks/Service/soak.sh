#!/usr/bin/env bash
# Soak, not a timed test and not run in CI: two release instances of the service sharing one private
# PostgreSQL on loopback, under MINUTES of mixed traffic with faults, then a report that says whether the
# service stayed correct and bounded.
#   Benchmarks/Service/soak.sh [MINUTES]   (default 10; RATE=requests/s overrides the default 150)
# SERVICE=PATH soaks that applepay-service binary instead of this package's release build; KEEP_LOGS=1
# keeps the logs folder (every request in requests.jsonl, RSS every 10 s in rss.csv) after a passing run too.
# It builds release binaries (applepay-service here, mint-tokens in the repository root), mints tokens
# signed now, starts PostgreSQL as ci.sh does and the two instances on free loopback ports, then runs
# soak.py beside this file. The whole run takes MINUTES plus about a minute once the builds are done.
#
# Traffic, about 150 requests/s in all so that two shared cores are not saturated (each instance then
# stays far below its load-run throughput, and what is measured is correctness over time, not speed):
# genuine tokens, each sent once, alternating instances (bare, in a correct payment-request envelope,
# to both instances at once, trickled slowly); replays of accepted tokens to the OTHER instance (as sent,
# and re-framed); hostile bodies (not JSON, a tampered or truncated copy of a token sent genuinely later,
# an envelope with an unknown member, a request that breaks the schema, a request the token does not
# match, which must claim nothing, so that token is sent again later and must be accepted, a body over
# --max-body-bytes); slow clients (a body one byte a second until the body deadline, a short body one
# byte at a time, half a body then abandoned); and /healthz, /readyz, /metrics.
# Faults: SIGHUP (key reload) to instance a at 25 % and to b at 75 %; PostgreSQL stopped at 50 %, down
# 5 s, started again. The outage window runs from the stop until both instances' /readyz say the store is
# reachable again, plus the store timeout (2 s) as margin: a request that overlaps it may fail.
#
# The report (also in the logs folder as report.txt):
# - requests by kind and status, with p50/p99 latency per kind and the error codes of 422s and 5xx;
# - tokens accepted twice: tokens answered 200 more than once across both instances (must be 0: the
#   shared replay store must make one claim win, even for a token sent to both instances at once);
# - genuine tokens refused outside the outage window: genuine tokens never accepted whose attempt did not
#   overlap the outage (any non-200, including a reset or a time-out; must be 0). Tokens answered 503 in
#   the outage are sent once more after it, as a client would, and that outcome is listed apart;
# - 5xx outside the outage window (must be 0);
# - each instance's VmRSS (/proc) after a warm-up (10 % of the run, 20 to 60 s) and at the end of the
#   traffic, and the growth in % (must be at most +10 %: state that grows with requests, such as a
#   leak or an unbounded cache, would show here; rss.csv in the logs has a sample every 10 s);
# - also checked: both instances stay alive, each SIGHUP is counted as a successful reload in /metrics,
#   the store is reachable again within 120 s, and each instance exits 0 on SIGTERM at the end;
# - notes: unexpected answers per kind (a hostile body accepted, a 413 that is a reset), connections
#   left open after a 408/413 that said Connection: close, the services' own counts from /metrics, and
#   their warning and error log lines grouped by shape.
# Exits 0 when every check passes. Everything it starts (services, PostgreSQL, temporary folders) is
# removed on exit, Ctrl-C included; on failure the logs are kept and their folder is printed.
set -euo pipefail
bench=$(cd "$(dirname "$0")" && pwd)
cd "$bench/../../Sources/Server"  # the service package
minutes=${1:-10}
rate=${RATE:-150}
[[ "$minutes" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [MINUTES]   (a whole number of minutes, at least 1)" >&2; exit 2; }
repo=$(cd ../.. && pwd)
benchmark="$bench"
store_timeout_ms=2000
request_timeout=30
max_body_bytes=65536

pgroot="" work="" logs="" control="" pids=()
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ -n "$control" ]; then "$control" stop >/dev/null 2>&1 || true; fi
  if [ -n "$pgroot" ]; then
    if [ -n "$logs" ]; then cp "$pgroot"/*.log "$logs/" 2>/dev/null || true; fi
    rm -rf "$pgroot"
  fi
  if [ -n "$work" ]; then rm -rf "$work"; fi
  if [ -n "$logs" ]; then
    if [ "$status" -ne 0 ]; then echo "soak: failed (exit $status); logs kept in $logs" >&2
    elif [ -n "${KEEP_LOGS:-}" ]; then echo "soak: logs kept in $logs"
    else rm -rf "$logs"; fi
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

logs=$(mktemp -d /tmp/applepay-soak-logs.XXXXXX)
# The builds' output goes to a log, printed only when a build fails (a compile error must not be lost).
build() {  # build DIRECTORY TIMEOUT PRODUCT
  (cd "$1" && timeout "$2" swift build -c release --product "$3") >>"$logs/build.log" 2>&1 \
    || { tail -40 "$logs/build.log" >&2; echo "soak: the release build of $3 failed" >&2; exit 1; }
}
[ -n "${SERVICE:-}" ] || build . 3600 applepay-service
build "$repo" 1800 mint-tokens
service=${SERVICE:-$(swift build -c release --show-bin-path)/applepay-service}
mint=$(cd "$repo" && swift build -c release --show-bin-path)/mint-tokens

work=$(mktemp -d /tmp/applepay-soak.XXXXXX)
# Half the requests carry a genuine token; 10 % spare, and 2,000 more that hostile copies are made of
# before they are sent genuinely (soak.py's --ahead).
count=$(( rate * minutes * 60 * 55 / 100 + 2500 ))
echo "soak: minting $count tokens signed now"
timeout 900 "$mint" "$work" "$count" --signed-now
# The tokens are signed once, before the run: the freshness window must outlast it.
window=$(( minutes * 60 + 1800 ))

# A private cluster with a control script for the restart, as ci.sh makes it.
source ./private-postgres.sh  # the working directory is Sources/Server
make_private_postgres
timeout 60 "$control" start || { cat "$pgroot/control.log" "$pgroot/postgres.log" >&2; exit 1; }

# Two instances on free loopback ports, one database.
instances=()
for name in a b; do
  "$service" --listen 127.0.0.1:0 --log-level warning \
    --merchant "cert=$work/merchant.cert.pem,key=$work/merchant.key.pem" --trust-root "$work/insecure-test-root.pem" \
    --window "$window" --replay-store "postgres://postgres@127.0.0.1:$pgport/postgres" \
    --store-timeout-ms "$store_timeout_ms" --request-timeout "$request_timeout" --max-body-bytes "$max_body_bytes" \
    </dev/null >"$logs/$name.out" 2>"$logs/$name.err" &
  pids+=($!)
  port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$logs/$name.out")
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$logs/$name.err" >&2; echo "soak: instance $name did not start" >&2; exit 1; }
  instances+=(--instance "$port:${pids[-1]}")
done

echo "soak: date $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) before the run"
driver=0
python3 "$benchmark/soak.py" --minutes "$minutes" --rate "$rate" "${instances[@]}" --tokens "$work/tokens.jsonl" \
  --pg-control "$control" --logs "$logs" --store-timeout-ms "$store_timeout_ms" --request-timeout "$request_timeout" \
  --max-body-bytes "$max_body_bytes" || driver=$?

# A clean drain is part of the run: SIGTERM must finish what is in flight and exit 0.
drained=0
for i in 0 1; do
  kill -TERM "${pids[$i]}" 2>/dev/null || true
  status=0
  for _ in $(seq 600); do kill -0 "${pids[$i]}" 2>/dev/null || break; sleep 0.1; done
  kill -0 "${pids[$i]}" 2>/dev/null && { echo "  instance still running 60 s after SIGTERM: killed"; kill -KILL "${pids[$i]}"; }
  wait "${pids[$i]}" || status=$?
  name=$([ "$i" = 0 ] && echo a || echo b)
  if [ "$status" -eq 0 ]; then echo "  [ok] instance $name exited 0 on SIGTERM"; else echo "  [FAIL] instance $name exited $status on SIGTERM"; drained=1; fi
done
pids=()
[ "$driver" -eq 0 ] && [ "$drained" -eq 0 ] || exit 1
echo "soak: passed"
