# shellcheck shell=bash
# A PostgreSQL server of one's own for the tests, and a PgBouncer in front
# of it: Debian's postgresql-15 (any installed major, the newest first) and
# pgbouncer binaries run directly, never the system services; loopback TCP
# on a free port with scram-sha-256 and a password, and a Unix socket in
# the server's directory. The server refuses to run as root: as root, both
# run as the user simba-pg (made when missing). Sourced by scripts/test and
# tests/e2e/postgres_common.sh:
#
#   pg_server_start DIR   initdb into DIR/data and start (max_connections
#                         $PG_MAX_CONNECTIONS, 200 unless set): sets PG_PORT,
#                         PG_PID (the postmaster), PG_URI
#                         (postgres://simba:PASSWORD@127.0.0.1:PORT/postgres)
#                         and PG_SOCKET_DIR; false when it cannot
#   pg_server_stop        SIGINT (a fast shutdown), then SIGKILL
#   pg_server_spawn       start it again on the same port and data (after
#                         pg_server_stop or a kill -9 of PG_PID)
#   pg_server_sql SQL     runs SQL as the superuser (psql over the socket)
#   pgbouncer_start       a PgBouncer in transaction mode in front: sets
#                         PGB_PORT, PGB_PID, PGB_URI; false when it cannot
#   pgbouncer_stop
#
# The processes are background jobs of the caller.

# shellcheck source=ports.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/ports.sh"
PG_PASSWORD=simba-test-secret-pw
PG_DIR='' PG_PORT='' PG_PID='' PG_URI='' PG_SOCKET_DIR='' PGB_PORT='' PGB_PID='' PGB_URI=''

pg_bin_dir() {
  local d
  for d in /usr/lib/postgresql/15/bin $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
    [[ -x $d/initdb && -x $d/postgres ]] && { echo "$d"; return 0; }
  done
  return 1
}

# The prefix that runs a command as the unprivileged user when we are root
# (setpriv execs it: `"${as_pg[@]}" CMD &` makes $! CMD's pid); pg_user
# sets it, making the user when missing.
as_pg=()
pg_user() {
  ((EUID == 0)) || return 0
  id -u simba-pg >/dev/null 2>&1 ||
    useradd --system --no-create-home --user-group --shell /usr/sbin/nologin simba-pg ||
    return 1
  as_pg=(setpriv --reuid=simba-pg --regid="$(id -g simba-pg)" --clear-groups --)
}

_port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

_pg_alive() { [[ -n $1 ]] && kill -0 "$1" 2>/dev/null && [[ $(ps -o stat= -p "$1" 2>/dev/null) != Z* ]]; }

pg_server_spawn() {
  local bin i
  bin=$(pg_bin_dir) || return 1
  # After a kill -9 the old server's processes may hold its shared memory
  # for a moment: a start that fails is tried again.
  for ((i = 0; i < 100; i++)); do
    "${as_pg[@]}" "$bin/postgres" -D "$PG_DIR/data" -p "$PG_PORT" -k "$PG_SOCKET_DIR" \
      -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections="${PG_MAX_CONNECTIONS:-200}" \
      </dev/null >>"$PG_DIR/server.log" 2>&1 &
    PG_PID=$!
    while _pg_alive "$PG_PID"; do
      "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -t 1 && return 0
      sleep 0.05
    done
    wait "$PG_PID" 2>/dev/null
    sleep 0.1
  done
  return 1
}

pg_server_start() {
  local bin attempt
  bin=$(pg_bin_dir) || return 1
  PG_DIR=$1
  mkdir -p -- "$PG_DIR" && chmod 755 -- "$PG_DIR" || return 1
  pg_user || return 1
  ((EUID == 0)) && chown simba-pg: -- "$PG_DIR"
  PG_SOCKET_DIR=$PG_DIR
  printf '%s\n' "$PG_PASSWORD" >"$PG_DIR/pw"
  ((EUID == 0)) && chown simba-pg: -- "$PG_DIR/pw"
  "${as_pg[@]}" "$bin/initdb" -D "$PG_DIR/data" -U simba --auth-local=scram-sha-256 \
    --auth-host=scram-sha-256 --pwfile="$PG_DIR/pw" -E UTF8 --no-sync \
    >"$PG_DIR/initdb.log" 2>&1 || { cat -- "$PG_DIR/initdb.log" >&2; return 1; }
  for ((attempt = 0; attempt < 20; attempt++)); do
    PG_PORT=$(random_server_port)
    _port_taken "$PG_PORT" && continue
    if pg_server_spawn; then
      PG_URI="postgres://simba:$PG_PASSWORD@127.0.0.1:$PG_PORT/postgres"
      return 0
    fi
  done
  tail -n 20 -- "$PG_DIR/server.log" >&2
  return 1
}

pg_server_stop() {
  local i
  [[ -n $PG_PID ]] || return 0
  kill -INT "$PG_PID" 2>/dev/null # a fast shutdown: clients are disconnected
  for ((i = 0; i < 100; i++)); do _pg_alive "$PG_PID" || break; sleep 0.05; done
  kill -KILL "$PG_PID" 2>/dev/null
  wait "$PG_PID" 2>/dev/null
  PG_PID=''
  return 0
}

pg_server_sql() {
  PGPASSWORD=$PG_PASSWORD psql -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCKET_DIR" -p "$PG_PORT" \
    -U simba -d postgres -At -c "$1"
}

pgbouncer_start() {
  local bin attempt i
  bin=$(command -v pgbouncer 2>/dev/null || echo /usr/sbin/pgbouncer)
  [[ -x $bin ]] || return 1
  printf '"simba" "%s"\n' "$PG_PASSWORD" >"$PG_DIR/userlist.txt"
  for ((attempt = 0; attempt < 20; attempt++)); do
    PGB_PORT=$(random_server_port)
    _port_taken "$PGB_PORT" && continue
    # options: the session timeouts simba sends at start-up, which
    # PgBouncer does not pass on (docs/backends/postgres.md, "PgBouncer").
    cat >"$PG_DIR/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$PG_PORT
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $PG_DIR/userlist.txt
pool_mode = transaction
ignore_startup_parameters = options
max_client_conn = 300
default_pool_size = 20
logfile = $PG_DIR/pgbouncer.log
INI
    ((EUID == 0)) && chown simba-pg: -- "$PG_DIR/pgbouncer.ini" "$PG_DIR/userlist.txt"
    "${as_pg[@]}" "$bin" -q "$PG_DIR/pgbouncer.ini" </dev/null >>"$PG_DIR/pgbouncer.out" 2>&1 &
    PGB_PID=$!
    for ((i = 0; i < 100; i++)); do
      _pg_alive "$PGB_PID" || break
      if _port_taken "$PGB_PORT"; then
        PGB_URI="postgres://simba:$PG_PASSWORD@127.0.0.1:$PGB_PORT/postgres"
        return 0
      fi
      sleep 0.05
    done
    kill -KILL "$PGB_PID" 2>/dev/null
    wait "$PGB_PID" 2>/dev/null
    PGB_PID=''
  done
  return 1
}

pgbouncer_stop() {
  [[ -n $PGB_PID ]] || return 0
  kill -TERM "$PGB_PID" 2>/dev/null
  wait "$PGB_PID" 2>/dev/null
  PGB_PID=''
  return 0
}
