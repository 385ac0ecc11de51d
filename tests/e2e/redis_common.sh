# shellcheck shell=bash
# Shared by tests/e2e/test_redis_*.sh; source it after common.sh:
#
#   source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
#   source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
#
#   use_test_redis       needs_backend redis (SIMBA_TEST_REDIS_URI: scripts/test
#                        starts a redis-server and sets it); then exports
#                        SIMBA_BACKEND as that URI with a key prefix of this
#                        test's own (after waiting out the quarantine of a
#                        fresh database, once)
#   use_test_redis_cluster  the same with SIMBA_TEST_REDIS_CLUSTER_URI (a Redis
#                        Cluster that scripts/test starts and warms up)
#   start_own_redis      a redis-server of the test's own, without persistence,
#                        on a free loopback port, for tests that restart or
#                        pause it: sets OWN_REDIS_PORT, OWN_REDIS_PID and
#                        OWN_REDIS_URI (timeout=500ms); extra arguments go to
#                        redis-server
#   restart_own_redis    SIGKILL it and start a fresh one on the same port:
#                        every key is gone
#   redis_ping PORT      true when a Redis answers PING on 127.0.0.1:PORT (a
#                        NOAUTH error counts: it wants a password, but it is up)
#   redis_cmd WORD...    one inline command to the test's own server
#                        (start_own_redis), its first reply line
#
# The servers are background jobs of the test, so common.sh's clean-up stops
# them with everything else.

use_test_redis() {
  needs_backend redis
  local sep='?'
  [[ $SIMBA_TEST_REDIS_URI == *\?* ]] && sep='&'
  export SIMBA_BACKEND="${SIMBA_TEST_REDIS_URI}${sep}prefix=e2e-$$-${RANDOM}${RANDOM}:"
  # A fresh database quarantines its first lease (docs/safety.md):
  # scripts/test waits that out once; this is a no-op then.
  "$SIMBA" run --mutex simba-warm-up --ttl 2s --transition 1s -- true ||
    fail "cannot warm up $SIMBA_TEST_REDIS_URI"
}

use_test_redis_cluster() {
  needs_backend redis-cluster
  export SIMBA_BACKEND="${SIMBA_TEST_REDIS_CLUSTER_URI}?prefix=e2e-$$-${RANDOM}${RANDOM}:"
}

redis_ping() {
  local line=''
  (
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'PING\r\n' >&3
    IFS= read -r -t 1 line <&3 || exit 1
    [[ $line == +PONG* || $line == -NOAUTH* ]]
  ) 2>/dev/null
}

_own_redis_bin=''
_own_redis_args=()

# _own_redis_spawn PORT: starts it, true once it answers
_own_redis_spawn() {
  local i
  "$_own_redis_bin" --port "$1" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    --dir "$T/redis" --logfile "$T/redis/redis.log" "${_own_redis_args[@]}" </dev/null >/dev/null 2>&1 &
  OWN_REDIS_PID=$!
  for ((i = 0; i < 100; i++)); do
    pid_alive "$OWN_REDIS_PID" || break # the port was taken
    redis_ping "$1" && return 0
    sleep 0.05
  done
  kill -KILL "$OWN_REDIS_PID" 2>/dev/null || true
  wait "$OWN_REDIS_PID" 2>/dev/null || true
  return 1
}

start_own_redis() {
  local port attempt
  _own_redis_bin=$(command -v redis-server 2>/dev/null || true)
  [[ -z $_own_redis_bin && -x /usr/bin/redis-server ]] && _own_redis_bin=/usr/bin/redis-server
  [[ -n $_own_redis_bin ]] || needs redis-server
  _own_redis_args=("$@")
  mkdir -p -- "$T/redis"
  for ((attempt = 0; attempt < 20; attempt++)); do
    port=$(random_server_port)
    redis_ping "$port" && continue # somebody else's
    if _own_redis_spawn "$port"; then
      OWN_REDIS_PORT=$port
      OWN_REDIS_URI="redis://127.0.0.1:$port/0?timeout=500ms"
      return 0
    fi
  done
  fail "could not start a redis-server of the test's own"
}

restart_own_redis() {
  kill -KILL "$OWN_REDIS_PID" 2>/dev/null || true
  wait "$OWN_REDIS_PID" 2>/dev/null || true
  local i
  for ((i = 0; i < 20; i++)); do
    _own_redis_spawn "$OWN_REDIS_PORT" && return 0
    sleep 0.1
  done
  fail "could not restart redis-server on port $OWN_REDIS_PORT"
}

redis_cmd() {
  local line=''
  exec 3<>"/dev/tcp/127.0.0.1/$OWN_REDIS_PORT"
  printf '%s\r\n' "$*" >&3
  IFS= read -r -t 5 line <&3 || true
  exec 3>&-
  printf '%s\n' "${line%$'\r'}"
}
