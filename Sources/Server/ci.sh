#!/usr/bin/env bash
# The server package's CI (the decryption service and the merchant-API client): installs what its tests
# need on a fresh Debian 12 machine, starts a private PostgreSQL cluster on loopback, builds the package
# and its tests ONCE (debug, the quickest cold build of SwiftNIO and BoringSSL on 2 cores), runs the service
# tests (the HTTP contract in process through HummingbirdTesting, the rest against the built executable) and
# the merchant-API tests against that build, then schemathesis against the running server and its
# OpenAPI document. Every step is bounded in time and prints its wall time; any failure exits non-zero.
#   Sources/Server/ci.sh [--install-only]
set -euo pipefail
cd "$(dirname "$0")"
repo=$(cd ../.. && pwd)
started=$SECONDS
# Pinned so that the checks (and their command-line options) are the same on every machine.
schemathesis_version=4.32.5

step() {  # step NAME SECONDS COMMAND...: runs the command under a time limit and prints its wall time
  local name="$1" limit="$2" start=$SECONDS status=0
  shift 2
  timeout --kill-after=20 "$limit" "$@" || status=$?
  echo "server ci: $name took $((SECONDS - start)) s"
  if [ "$status" -ne 0 ]; then
    [ "$status" -eq 124 ] && echo "server ci: $name ran over its limit of $limit s" >&2
    echo "server ci: $name failed (exit $status)" >&2
    exit "$status"
  fi
}

# Debian's packages. The package's own cluster is not used (the tests start a private one).
step_start=$SECONDS
need=()
for pkg in postgresql curl openssl ca-certificates python3 python3-venv; do  # openssl: both test PKIs
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ "${#need[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -qq
  timeout 900 apt-get install -y -qq "${need[@]}" >/dev/null
fi
echo "server ci: install packages (${need[*]:-none missing}) took $((SECONDS - step_start)) s"

# schemathesis: the one on PATH when it is the pinned version, else a virtual environment of our own
# (Debian's python3 refuses pip installs into the system).
step_start=$SECONDS
venv="${XDG_CACHE_HOME:-$HOME/.cache}/applepay-service-ci/venv-$schemathesis_version"
if command -v schemathesis >/dev/null 2>&1 && schemathesis --version 2>/dev/null | grep -q "version $schemathesis_version\$"; then
  schemathesis_bin=$(command -v schemathesis)
else
  if [ ! -x "$venv/bin/schemathesis" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    timeout 900 "$venv/bin/python" -m pip install -q --disable-pip-version-check "schemathesis==$schemathesis_version"
  fi
  schemathesis_bin="$venv/bin/schemathesis"
fi
echo "server ci: install $("$schemathesis_bin" --version) took $((SECONDS - step_start)) s"
# `ci.sh --install-only`: the installs above and nothing else (.ci/run does them in the background early).
[ "${1:-}" = --install-only ] && exit 0

# A private cluster and its stop|start control script for the outage tests (private-postgres.sh).
source ./private-postgres.sh
make_private_postgres
service_pid=""
cleanup() {
  if [ -n "$service_pid" ]; then kill "$service_pid" 2>/dev/null || true; fi
  "$control" stop >/dev/null 2>&1 || true
  rm -rf "$pgroot"
}
trap cleanup EXIT
step_start=$SECONDS
timeout 60 "$control" start || { cat "$pgroot/control.log" "$pgroot/postgres.log" >&2; exit 1; }
echo "server ci: start PostgreSQL took $((SECONDS - step_start)) s"
export APPLEPAY_TEST_POSTGRES="postgres://postgres@127.0.0.1:$pgport/postgres"
export APPLEPAY_TEST_PG_CONTROL="$control"
export APPLEPAY_TEST_PG_LOG="$pgroot/postgres.log"
export APPLEPAY_TEST_REQUIRE_POSTGRES=1

# The engine's CLI, for the merchant-session dispatch test: .ci/run's `swift test` has built it already,
# so this is a no-op there.
step "the engine's CLI (applepay-decrypt, for the dispatch test)" 900 bash -c "cd '$repo' && swift build --product applepay-decrypt"
APPLEPAY_DECRYPT_BIN="$(cd "$repo" && swift build --show-bin-path)/applepay-decrypt"
export APPLEPAY_DECRYPT_BIN

# One build, debug, with the tests: there is no second build of SwiftNIO, BoringSSL and Hummingbird. Debug
# because CI's budget is 45 minutes on 2 cores and a cold debug build of this package is the quicker one
# (before the merge: the service's debug build 473 s, its release build 667 s). Deploy with
# `swift build -c release`; Benchmarks/Service/load.sh builds and measures release.
step "build the server package and its tests (debug)" 2400 swift build --build-tests
step "service and merchant-API tests (the HTTP contract in process; TLS, signals, PostgreSQL, limits in real processes)" 900 swift test --skip-build

# schemathesis against the running server (memory store, bundled vectors, API key on), `--checks all`: every
# generated input must get a documented status, content type and body shape, and never a 5xx.
bin=$(swift build --show-bin-path)/applepay-service
v="$repo/Vectors"
out="$pgroot/service.out"
APPLEPAY_CI_KEY=ci-key "$bin" --listen 127.0.0.1:0 --api-key-env APPLEPAY_CI_KEY --log-level warning \
  --merchant "cert=$v/merchants/ec.cert.pem,key=$v/merchants/ec.key.pem" \
  --merchant "cert=$v/merchants/rsa.cert.pem,key=$v/merchants/rsa.key.pem" \
  --trust-root "$v/trust/test-root.pem" --insecure-testing-fixed-now 2026-03-01T12:01:00Z \
  </dev/null >"$out" 2>"$out.err" &
service_pid=$!
for _ in $(seq 300); do grep -q 'listening on' "$out" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$out")
[ -n "$port" ] || { cat "$out.err" >&2; echo "the service did not start" >&2; exit 1; }
# Tests/schemathesis/hooks.py teaches it to send the batch endpoint's JSONL bodies; schemathesis.toml says
# that 422 (a token read and rejected, TokenRejected) answers a valid request. Every check: a method the
# contract does not declare is 405 with Allow, a batch without a body 400, the document matches its own
# declared response, and any failure fails CI. One worker: with two, schemathesis draws in two threads, and
# CPython 3.11's ast module (Hypothesis parses its lambdas' source) keeps one recursion counter for both,
# so a run can fail with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905), as
# CI's run of fb74b16 did, in its coverage phase, with every request answered as documented.
export SCHEMATHESIS_HOOKS="$PWD/Tests/schemathesis/hooks.py"
step "schemathesis" 400 "$schemathesis_bin" --no-color --config-file "$PWD/Tests/schemathesis/schemathesis.toml" \
  run "http://127.0.0.1:$port/openapi.yaml" --url "http://127.0.0.1:$port" \
  -H 'Authorization: Bearer ci-key' --max-examples 150 --workers 1 --max-time 60 --request-timeout 20 --seed 1 \
  --checks all --suppress-health-check all
kill -TERM "$service_pid"
status=0
wait "$service_pid" || status=$?
service_pid=""
[ "$status" -eq 0 ] || { echo "the service exited $status after SIGTERM" >&2; tail -20 "$out.err" >&2; exit 1; }
echo "server ci: passed in $((SECONDS - started)) s"
