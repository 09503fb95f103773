# Sourced by load.sh and cpu-per-token.sh: a private work folder (removed at exit, with the service
# they start), COUNT freshly minted unique tokens signed now, and the service options that accept them.
# Usage: mint_tokens NAME COUNT   (needs $mint, the root package's mint-tokens; sets work, service_pid, keys)
mint_tokens() {
  work=$(mktemp -d "/tmp/applepay-$1.XXXXXX")
  service_pid=""
  trap 'if [ -n "$service_pid" ]; then kill "$service_pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
  timeout 600 "$mint" "$work" "$2" --signed-now
  keys=(--merchant "cert=$work/merchant.cert.pem,key=$work/merchant.key.pem" --trust-root "$work/insecure-test-root.pem" --window 3600)
}
