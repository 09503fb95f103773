#!/usr/bin/env bash
# The service article's example (Service.md): start applepay-service on the bundled Vectors/, decrypt a
# token, send it again. Run by .ci/run after Sources/Server/ci.sh has built the server package (debug):
# the article's ```sh blocks are runs of lines of this file.
set -euo pipefail
cd "$(dirname "$0")/../.."
log=$(mktemp)
set -m  # the service in a process group of its own, so that the trap stops swift run and what it started

serve() {
    swift run --package-path Sources/Server applepay-service --listen 127.0.0.1:8080 \
      --merchant cert=Vectors/merchants/ec.cert.pem,key=Vectors/merchants/ec.key.pem \
      --merchant cert=Vectors/merchants/rsa.cert.pem,key=Vectors/merchants/rsa.key.pem \
      --trust-root Vectors/trust/test-root.pem --insecure-testing-fixed-now 2026-03-01T12:01:00Z
}
serve > "$log" 2>&1 &
service=$!
trap 'kill -- -"$service" 2>/dev/null || true; wait "$service" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 600); do
  curl -sf http://127.0.0.1:8080/healthz > /dev/null && break
  kill -0 "$service" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.5
done

decrypt() {
    curl -s -H 'Content-Type: application/json' --data-binary @Vectors/tokens/ec-3dsecure.json \
      http://127.0.0.1:8080/v1/decrypt
}
first=$(decrypt)
second=$(decrypt)
case "$first" in *'"payment":{'*) ;; *) echo "service example: no payment: $first" >&2; exit 1 ;; esac
case "$second" in *'"error":"replayedTransaction"'*) ;; *) echo "service example: not a replay: $second" >&2; exit 1 ;; esac
echo "service example: a payment, then replayedTransaction"
