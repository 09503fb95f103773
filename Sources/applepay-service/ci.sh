#!/usr/bin/env bash
# The service's CI: installs what its tests need (PostgreSQL, curl, openssl, schemathesis), starts a
# private PostgreSQL cluster on a loopback port, builds and tests the service package, then runs
# schemathesis against the running server and its OpenAPI document. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)
repo=$(cd ../.. && pwd)
started=$(date +%s)

need=()
for pkg in postgresql curl openssl; do dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg"); done
if [ "${#need[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}"
fi
python3 -c 'import schemathesis' 2>/dev/null || python3 -m pip install -q schemathesis

# A private cluster owned by the postgres user (initdb refuses root), trust auth on loopback only.
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
pgroot=$(mktemp -d /tmp/applepay-pg.XXXXXX)
chmod 755 "$pgroot"
pgport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_postgres=()
if [ "$(id -u)" = 0 ]; then chown postgres "$pgroot"; as_postgres=(runuser -u postgres --); fi
"${as_postgres[@]}" "$pgbin/initdb" -D "$pgroot/data" -A trust -U postgres --no-sync >/dev/null
control="$pgroot/control.sh"
cat > "$control" <<CONTROL
#!/usr/bin/env bash
# stop|start the test cluster (used by the outage test).
set -e
case "\$1" in
  stop) ${as_postgres[*]} "$pgbin/pg_ctl" -D "$pgroot/data" -m fast -w stop >/dev/null ;;
  start) ${as_postgres[*]} "$pgbin/pg_ctl" -D "$pgroot/data" -l "$pgroot/log" -w \
           -o "-p $pgport -k $pgroot -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start </dev/null >/dev/null 2>&1 ;;
esac
CONTROL
chmod 755 "$control"
service_pid=""
cleanup() {
  [ -n "$service_pid" ] && kill "$service_pid" 2>/dev/null || true
  "$control" stop 2>/dev/null || true
  rm -rf "$pgroot"
}
trap cleanup EXIT
"$control" start
export APPLEPAY_TEST_POSTGRES="postgres://postgres@127.0.0.1:$pgport/postgres"
export APPLEPAY_TEST_PG_CONTROL="$control"

swift build --build-tests
swift test

# schemathesis against the running server (memory store, bundled vectors, API key on).
bin=$(swift build --show-bin-path)/applepay-service
v="$repo/Vectors"
log=$(mktemp)
APPLEPAY_CI_KEY=ci-key "$bin" --listen 127.0.0.1:0 --api-key-env APPLEPAY_CI_KEY \
  --merchant "cert=$v/merchants/ec.cert.pem,key=$v/merchants/ec.key.pem" \
  --merchant "cert=$v/merchants/rsa.cert.pem,key=$v/merchants/rsa.key.pem" \
  --trust-root "$v/trust/test-root.pem" --insecure-testing-fixed-now 2026-03-01T12:01:00Z >"$log" 2>"$log.err" &
service_pid=$!
for _ in $(seq 100); do grep -q 'listening on' "$log" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$log")
[ -n "$port" ] || { cat "$log.err"; echo "the service did not start" >&2; exit 1; }
schemathesis run "http://127.0.0.1:$port/openapi.yaml" --url "http://127.0.0.1:$port" \
  -H 'Authorization: Bearer ci-key' --max-examples 200 --workers 2 \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
  --suppress-health-check all
kill -TERM "$service_pid"
wait "$service_pid"
service_pid=""
echo "service CI passed in $(( $(date +%s) - started )) s"
