# Sourced by ci.sh and Benchmarks/Service/soak.sh: a private PostgreSQL cluster from Debian's packages, owned by the
# postgres user (initdb refuses root), trust authentication on loopback only, and a control script that
# stops and starts it (the tests' and the soak's outages).
#   make_private_postgres   sets pgroot (the cluster's folder), pgport and control ("$control" start|stop)
make_private_postgres() {
  local pgbin as_postgres=""
  pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  pgroot=$(mktemp -d /tmp/applepay-pg.XXXXXX)
  chmod 755 "$pgroot"
  pgport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  if [ "$(id -u)" = 0 ]; then chown postgres "$pgroot"; as_postgres="runuser -u postgres --"; fi
  $as_postgres "$pgbin/initdb" -D "$pgroot/data" -A trust -U postgres --no-sync >"$pgroot/initdb.log" 2>&1 \
    || { cat "$pgroot/initdb.log" >&2; return 1; }
  # The server is started detached: its own session, stdin from /dev/null, output to a file, and every
  # inherited descriptor above 2 closed. Foundation's Process learns that a child exited from the end of
  # a socket pair the child inherits; a postmaster started with that socket open kept it, and a test's
  # waitUntilExit() on this script never returned. Detached, Ctrl-C on a soak does not reach it either.
  control="$pgroot/control.sh"
  cat > "$control" <<CONTROL
#!/usr/bin/env bash
set -e
exec </dev/null >>"$pgroot/control.log" 2>&1
for fd in /proc/\$\$/fd/*; do fd=\${fd##*/}; [ "\$fd" -gt 2 ] && eval "exec \$fd>&-" 2>/dev/null || true; done
case "\$1" in
  stop) $as_postgres "$pgbin/pg_ctl" -D "$pgroot/data" -m fast -w -t 30 stop ;;
  start) setsid $as_postgres "$pgbin/pg_ctl" -D "$pgroot/data" -l "$pgroot/postgres.log" -w -t 30 \\
           -o "-p $pgport -k $pgroot -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start ;;
  *) echo "usage: \$0 stop|start" >&2; exit 2 ;;
esac
CONTROL
  chmod 755 "$control"
}
