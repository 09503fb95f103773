#!/usr/bin/env bash
# Load run, not a timed test: the batch CLI's tokens/s and the service's tokens/s with p50/p99 under
# wrk on loopback, measured in the same run on the same freshly minted tokens.
# Usage: Sources/applepay-service/Benchmark/load.sh [SECONDS] [CONNECTIONS] [TOKENS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-15}
connections=${2:-16}
count=${3:-60000}
repo=$(cd ../.. && pwd)
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null; }

swift build -c release --product applepay-service >/dev/null
swift build -c release --product mint-load-tokens >/dev/null
(cd "$repo" && swift build -c release --product applepay-decrypt >/dev/null)
bin=$(swift build -c release --show-bin-path)
cli=$(cd "$repo" && swift build -c release --show-bin-path)/applepay-decrypt

work=$(mktemp -d /tmp/applepay-load.XXXXXX)
service_pid=""
trap '[ -n "$service_pid" ] && kill "$service_pid" 2>/dev/null; rm -rf "$work"' EXIT
"$bin/mint-load-tokens" "$work" "$count"
keys=(--merchant "cert=$work/merchant.cert.pem,key=$work/merchant.key.pem" --trust-root "$work/root.pem" --window 3600)
cores=$(nproc)

# The batch CLI on the same tokens (its own in-process replay ledger).
cli_out=$("$cli" batch "$work/tokens.jsonl" --out "$work/cli.jsonl" --lanes "$cores" --quiet "${keys[@]}" 2>&1 | tail -1)
cli_rate=$(printf '%s' "$cli_out" | sed -n 's/.*(\([0-9]*\) tokens\/s.*/\1/p')

"$bin/applepay-service" --listen 127.0.0.1:0 "${keys[@]}" --lanes "$cores" --log-level warning >"$work/service.out" 2>"$work/service.err" &
service_pid=$!
for _ in $(seq 100); do grep -q 'listening on' "$work/service.out" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/service.out")
result=$(wrk -t2 -c"$connections" -d"${seconds}s" --latency -s Benchmark/post-token.lua "http://127.0.0.1:$port" -- "$work/tokens.jsonl" 2 | grep '^RESULT')
kill -TERM "$service_pid"; wait "$service_pid" || true; service_pid=""

rps=$(printf '%s' "$result" | sed -n 's/.* rps=\([0-9]*\).*/\1/p')
echo "date: $(date -u +%Y-%m-%d) cores: $cores tokens: $count"
echo "batch CLI: $cli_rate tokens/s   ($cli_out)"
echo "service:   $rps tokens/s over HTTP, wrk -t2 -c$connections -d${seconds}s   ($result)"
python3 -c "print(f'service / CLI = {$rps / max(1, $cli_rate):.2f}')"
