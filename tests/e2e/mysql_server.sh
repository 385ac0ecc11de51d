# shellcheck shell=bash
# A MariaDB server of one's own for the tests: Debian's mariadb-server
# binaries run directly, never the system service; loopback TCP on a free
# port, a Unix socket in the server's directory, and a user simba with a
# password (mysql_native_password) that owns the database simba. mariadbd
# refuses to run as root: as root, it runs as the user simba-mysql (made
# when missing). Sourced by scripts/test and tests/e2e/mysql_common.sh:
#
#   my_server_start DIR   mariadb-install-db into DIR/data, then mariadbd in
#                         the background: sets MY_PORT, MY_SOCKET, MY_URI
#                         (mysql://simba:PASSWORD@127.0.0.1:PORT/simba) at
#                         once, MY_PID once it answers (my_server_wait);
#                         false when it cannot even begin
#   my_server_wait [S]    waits (S seconds, 30 unless given) until the server
#                         answers; false when it does not
#   my_server_stop        SIGTERM (a clean shutdown), then SIGKILL
#   my_server_spawn       start it again on the same port and data (after
#                         my_server_stop or a kill -9 of MY_PID)
#   my_server_sql SQL     runs SQL as the server's root (the mariadb client
#                         over the socket)
#   MY_EXTRA_OPTIONS      more options of mariadbd (an array)
#
# Its start-up (install-db about 3 s, the server well under 1 s) runs in
# the background: scripts/test starts it before the build and waits after.

# shellcheck source=ports.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/ports.sh"
MY_PASSWORD=simba-test-mysql-pw
MY_EXTRA_OPTIONS=() # more options of mariadbd (e.g. TLS), set before my_server_start
MY_DIR='' MY_PORT='' MY_PID='' MY_URI='' MY_SOCKET=''

my_bin() { command -v mariadbd 2>/dev/null || { [[ -x /usr/sbin/mariadbd ]] && echo /usr/sbin/mariadbd; }; }

# The prefix that runs a command as the unprivileged user when we are root.
as_my=()
_my_user() {
  ((EUID == 0)) || return 0
  id -u simba-mysql >/dev/null 2>&1 ||
    useradd --system --no-create-home --user-group --shell /usr/sbin/nologin simba-mysql ||
    return 1
  as_my=(setpriv --reuid=simba-mysql --regid="$(id -g simba-mysql)" --clear-groups --)
}

_my_port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Small and fast: the tests' server holds a few rows; durability is not
# what they test (a kill -9 loses at most the last second).
_my_options() {
  printf '%s\n' --no-defaults --datadir="$MY_DIR/data" --socket="$MY_SOCKET" --port="$MY_PORT" \
    --bind-address=127.0.0.1 --skip-name-resolve --innodb-log-file-size=8M \
    --innodb-buffer-pool-size=32M --innodb-flush-log-at-trx-commit=0 --skip-log-bin \
    --performance-schema=OFF --max-connections=400 --log-error="$MY_DIR/error.log" \
    --pid-file="$MY_DIR/mariadbd.pid" --init-file="$MY_DIR/init.sql" --tmpdir="$MY_DIR/tmp"
  ((${#MY_EXTRA_OPTIONS[@]} == 0)) || printf '%s\n' "${MY_EXTRA_OPTIONS[@]}"
}

my_server_spawn() {
  local bin
  bin=$(my_bin) || return 1
  rm -f -- "$MY_DIR/mariadbd.pid"
  mapfile -t opts < <(_my_options)
  "${as_my[@]}" "$bin" "${opts[@]}" </dev/null >>"$MY_DIR/server.out" 2>&1 &
  MY_PID=$!
}

my_server_start() {
  local bin
  bin=$(my_bin) || return 1
  command -v mariadb-install-db >/dev/null 2>&1 || return 1
  MY_DIR=$1
  # Its temporary tables in a directory of its own: files of another's
  # in /tmp were once removed under it (a cleaner of /tmp), and MariaDB
  # 10.11 crashed (signal 11) on the failed delete.
  mkdir -p -- "$MY_DIR/tmp" && chmod 755 -- "$MY_DIR" || return 1
  _my_user || return 1
  MY_SOCKET=$MY_DIR/mysqld.sock
  for ((attempt = 0; attempt < 20; attempt++)); do
    MY_PORT=$(random_server_port)
    _my_port_taken "$MY_PORT" || break
  done
  cat >"$MY_DIR/init.sql" <<SQL
CREATE DATABASE IF NOT EXISTS simba;
CREATE USER IF NOT EXISTS 'simba'@'%' IDENTIFIED BY '$MY_PASSWORD';
GRANT ALL ON simba.* TO 'simba'@'%';
SQL
  ((EUID == 0)) && chown -R simba-mysql: -- "$MY_DIR"
  MY_URI="mysql://simba:$MY_PASSWORD@127.0.0.1:$MY_PORT/simba"
  # In the background: the caller builds meanwhile, then my_server_wait.
  (
    "${as_my[@]}" mariadb-install-db --no-defaults --datadir="$MY_DIR/data" \
      --auth-root-authentication-method=socket --skip-test-db --skip-name-resolve \
      --innodb-log-file-size=8M --innodb-buffer-pool-size=32M >"$MY_DIR/install.log" 2>&1 ||
      exit 1
    mapfile -t opts < <(_my_options)
    exec "${as_my[@]}" "$bin" "${opts[@]}" </dev/null >>"$MY_DIR/server.out" 2>&1
  ) &
  MY_PID=$!
}

# The server answers on its socket (mariadb-admin ping: 0 once it answers,
# even with access denied), and its TCP port is bound. A socket file and a
# bound port alone were once not it: the client's first statement then
# found nobody on the socket (ECONNREFUSED, a CI run under load).
my_server_wait() {
  local i limit=$((${1:-30} * 20))
  for ((i = 0; i < limit; i++)); do
    kill -0 "$MY_PID" 2>/dev/null || break
    if [[ -S $MY_SOCKET ]] && _my_port_taken "$MY_PORT" &&
      mariadb-admin --no-defaults -S "$MY_SOCKET" -u root --connect-timeout=2 ping \
        >/dev/null 2>&1; then
      [[ -s $MY_DIR/mariadbd.pid ]] && MY_PID=$(<"$MY_DIR/mariadbd.pid")
      return 0
    fi
    sleep 0.05
  done
  tail -n 20 -- "$MY_DIR/install.log" "$MY_DIR/error.log" >&2 2>/dev/null
  return 1
}

my_server_stop() {
  local i
  [[ -n $MY_PID ]] || return 0
  kill -TERM "$MY_PID" 2>/dev/null
  for ((i = 0; i < 200; i++)); do kill -0 "$MY_PID" 2>/dev/null || break; sleep 0.05; done
  kill -KILL "$MY_PID" 2>/dev/null
  wait "$MY_PID" 2>/dev/null
  MY_PID=''
  return 0
}

my_server_sql() {
  mariadb --no-defaults -S "$MY_SOCKET" -u root -N -B -e "$1"
}
