# shellcheck shell=bash
# Shared by tests/e2e/test_redis_sentinel_*.sh; source it after common.sh and
# redis_common.sh:
#
#   start_sentinel_group   a master, a replica and three sentinels (Debian's
#                          redis-server, in sentinel mode for the sentinels)
#                          on free loopback ports under $T/sentinel, all
#                          background jobs of the test (common.sh stops
#                          them); waits until the sentinels know the replica
#                          and each other. Sets MASTER_PORT, REPLICA_PORT,
#                          MASTER_PID, REPLICA_PID, SENTINEL_PORTS (array)
#                          and SENTINEL_URI (redis+sentinel://.../mymaster).
#   rcli PORT ARGS...      redis-cli on 127.0.0.1:PORT, 2 s at most
#   spawn_redis NAME ARGS...  one more redis-server job on a free port:
#                          sets SPAWNED_PORT, SPAWNED_PID
#   spawn_sentinel LINES   one more sentinel on a free port, LINES in its
#                          config: sets SPAWNED_PORT, SPAWNED_PID
#   master_port            the port the first sentinel names as the master
#
# down-after-milliseconds is DOWN_AFTER_MS (default 1000): a master that does
# not answer for that long is down; a failover follows within seconds.

DOWN_AFTER_MS=${DOWN_AFTER_MS:-1000}

rcli() {
  local port=$1
  shift
  timeout 2 redis-cli -h 127.0.0.1 -p "$port" "$@" 2>/dev/null
}

master_port() {
  rcli "${SENTINEL_PORTS[0]}" SENTINEL get-master-addr-by-name mymaster | sed -n 2p
}

# _free_port: a port where nothing answers now
_free_port() {
  local p
  for _ in {1..50}; do
    p=$(random_server_port)
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || {
      printf '%s\n' "$p"
      return 0
    }
  done
  fail "no free port"
}

# _spawn_redis NAME PORT ARGS...: a redis-server job, true once it answers
_spawn_redis() {
  local name=$1 port=$2 i
  shift 2
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    --dir "$T/sentinel" --logfile "$T/sentinel/$name.log" "$@" </dev/null >/dev/null 2>&1 &
  SPAWNED_PID=$!
  for ((i = 0; i < 100; i++)); do
    pid_alive "$SPAWNED_PID" || return 1
    [[ $(rcli "$port" PING) == PONG ]] && return 0
    sleep 0.05
  done
  return 1
}

# spawn_redis NAME ARGS...: _spawn_redis on a free port, trying others when
# it was taken meanwhile; sets SPAWNED_PORT and SPAWNED_PID.
spawn_redis() {
  local name=$1 i
  shift
  for ((i = 0; i < 10; i++)); do
    SPAWNED_PORT=$(_free_port)
    _spawn_redis "$name" "$SPAWNED_PORT" "$@" && return 0
    kill -KILL "$SPAWNED_PID" 2>/dev/null || true
  done
  fail "could not start redis-server ($name): $(tail -3 -- "$T/sentinel/$name.log" 2>/dev/null)"
}

# spawn_sentinel CONF_LINES: a sentinel job on a free port, with
# CONF_LINES (after port, bind, dir and logfile) in its config; tried again
# on another port when the one chosen was taken meanwhile (its process then
# exits). Sets SPAWNED_PORT and SPAWNED_PID.
spawn_sentinel() {
  local port conf i j
  for ((i = 0; i < 10; i++)); do
    port=$(_free_port) conf=$T/sentinel/sentinel-$port.conf
    printf 'port %s\nbind 127.0.0.1\ndir %s\nlogfile %s\n%s\n' "$port" "$T/sentinel" \
      "$T/sentinel/sentinel-$port.log" "$1" >"$conf"
    redis-server "$conf" --sentinel </dev/null >/dev/null 2>&1 &
    SPAWNED_PID=$! SPAWNED_PORT=$port
    for ((j = 0; j < 200; j++)); do
      pid_alive "$SPAWNED_PID" || break
      [[ $(rcli "$port" PING) == PONG ]] && return 0
      sleep 0.05
    done
    kill -KILL "$SPAWNED_PID" 2>/dev/null || true
  done
  fail "could not start a sentinel: $(tail -3 -- "$T/sentinel/sentinel-$port.log" 2>/dev/null)"
}

_spawn_sentinel() {
  spawn_sentinel "sentinel monitor mymaster 127.0.0.1 $MASTER_PORT 2
sentinel down-after-milliseconds mymaster $DOWN_AFTER_MS
sentinel failover-timeout mymaster 10000
sentinel parallel-syncs mymaster 1"
  SENTINEL_PORTS+=("$SPAWNED_PORT")
  SENTINEL_PIDS+=("$SPAWNED_PID")
}

start_sentinel_group() {
  needs redis-server redis-cli
  mkdir -p -- "$T/sentinel"
  spawn_redis master
  MASTER_PORT=$SPAWNED_PORT MASTER_PID=$SPAWNED_PID
  spawn_redis replica --replicaof 127.0.0.1 "$MASTER_PORT" --repl-diskless-sync-delay 0
  REPLICA_PORT=$SPAWNED_PORT REPLICA_PID=$SPAWNED_PID
  SENTINEL_PORTS=() SENTINEL_PIDS=()
  for _ in 1 2 3; do
    _spawn_sentinel
  done
  wait_for 60 _group_ready
  SENTINEL_URI="redis+sentinel://$(printf '127.0.0.1:%s,' "${SENTINEL_PORTS[@]}")"
  SENTINEL_URI="${SENTINEL_URI%,}/mymaster?timeout=500ms"
}

# Every sentinel knows the replica and the two others; the replica is in sync.
_group_ready() {
  local p
  rcli "$REPLICA_PORT" INFO replication | grep -q 'master_link_status:up' || return 1
  for p in "${SENTINEL_PORTS[@]}"; do
    [[ $(rcli "$p" SENTINEL master mymaster | grep -A1 -x 'num-other-sentinels' | tail -1) == 2 ]] ||
      return 1
    rcli "$p" SENTINEL replicas mymaster | grep -qx "127.0.0.1:$REPLICA_PORT" || return 1
  done
}

# held_lease_scenario ACTION HOLD_S [LEASE]: runs and a hand-over through
# SENTINEL_URI, then a lease held (CMD of HOLD_S seconds; every lease is
# LEASE, default "--ttl 2s --transition 2s") with a waiter queued behind
# it, and ACTION at t0 while fresh contenders (--no-wait) keep trying until
# the holder and the waiter have ended (15 s at most). ACTION is
# "failover" (SENTINEL FAILOVER) or "kill9" (the replica is pointed at a
# port where nobody listens before the holder acquires, so that the lease
# never reaches it -- a replica that lags; then SIGKILL of the master: the
# replica Sentinel promotes lacks the running lease; the holder's simba is
# paused from t0 to t0 + 10 s). Every CMD
# takes an exclusive flock on $T/excl and logs "start PID TOKEN MS" (or
# OVERLAP when another CMD still holds the lock). Sets HOLDER_RC, WAITER_RC,
# NEXT_MS (from t0 to the first CMD after the holder's) and HOLDER_END_MS
# (from t0 to the holder's exit), and fails on an overlap or a token that
# does not increase.
held_lease_scenario() {
  local action=$1 hold_s=$2 log=$T/log lease
  read -r -a lease <<<"${3:---ttl 2s --transition 2s}"
  cat >"$T/cmd.sh" <<'CMD'
log=$1 dir=$2
exec 9>>"$dir/excl"
flock -n 9 || echo "OVERLAP $$ $SIMBA_FENCING_TOKEN" >>"$log"
echo "start $$ $SIMBA_FENCING_TOKEN ${EPOCHREALTIME/./}" >>"$log"
exec sleep "$3"
CMD
  start_sentinel_group
  export SIMBA_BACKEND=$SENTINEL_URI
  # A fresh database quarantines its first lease (docs/safety.md): marked
  # new (the group was just started), it does not.
  "$SIMBA" doctor --init >/dev/null || fail "doctor --init refused the new group's master"
  "$SIMBA" run --mutex warm-up --ttl 1s --transition 1s -- true
  assert_exit 0 "$SIMBA" run --mutex m "${lease[@]}" -- bash "$T/cmd.sh" "$log" "$T" 0
  # A hand-over: B queues behind A and gets the mutex from A's release.
  "$SIMBA" run --mutex m "${lease[@]}" -- bash "$T/cmd.sh" "$log" "$T" 1 &
  local a=$!
  wait_for 10 _starts_at_least 2
  assert_exit 0 "$SIMBA" run --mutex m "${lease[@]}" -- bash "$T/cmd.sh" "$log" "$T" 0
  wait "$a" || fail "the first holder of the hand-over failed"
  _starts_at_least 3 || fail "the hand-over did not run its CMD"

  # (A stopped replica would not do: the kernel still buffers what the
  # master sends it.)
  [[ $action == kill9 ]] && rcli "$REPLICA_PORT" REPLICAOF 127.0.0.1 1 >/dev/null
  "$SIMBA" run --mutex m "${lease[@]}" -- bash "$T/cmd.sh" "$log" "$T" "$hold_s" &
  local holder=$!
  wait_for 10 _starts_at_least 4
  "$SIMBA" run --mutex m "${lease[@]}" -- bash "$T/cmd.sh" "$log" "$T" 0 &
  local waiter=$!
  sleep 0.5
  local t0
  t0=$(now_ms)
  case $action in
    failover) [[ $(rcli "${SENTINEL_PORTS[0]}" SENTINEL FAILOVER mymaster) == OK ]] ||
      fail "SENTINEL FAILOVER refused" ;;
    kill9)
      kill -KILL "$MASTER_PID"
      # The holder's simba paused, as if cut off from the new master: only
      # its watchdog stops CMD, at the end of the lease; the new master's
      # quarantine must outlast that. It goes on after 10 s (past the lease's
      # end, 7 s, where its watchdog stopped CMD).
      kill -STOP "$holder"
      (
        sleep 10
        kill -CONT "$holder"
      ) &
      ;;
  esac
  # The contenders try until both the holder and the waiter have ended
  # (the window where a second CMD could start beside one of theirs), for
  # 15 s at most.
  (
    end=$(($(now_ms) + 15000))
    while (($(now_ms) < end)) && [[ ! -e $T/contenders.stop ]]; do
      timeout 10 "$SIMBA" run --mutex m --no-wait "${lease[@]}" -- \
        bash "$T/cmd.sh" "$log" "$T" 0 2>>"$T/contenders.err" || true
      sleep 0.2
    done
  ) &
  local contenders=$!
  wait_for 40 pid_dead "$holder"
  HOLDER_END_MS=$(($(now_ms) - t0))
  HOLDER_RC=0
  wait "$holder" || HOLDER_RC=$?
  wait_for 40 pid_dead "$waiter"
  WAITER_RC=0
  wait "$waiter" || WAITER_RC=$?
  touch "$T/contenders.stop"
  wait_for 30 pid_dead "$contenders"
  echo "failover: master $(master_port) (was $MASTER_PORT, replica $REPLICA_PORT)" >&2
  _check_log "$log" "$t0"
}

_starts_at_least() {
  local n
  n=$(grep -c '^start ' "$T/log" 2>/dev/null) || true
  ((${n:-0} >= $1))
}

# No overlap, tokens strictly increasing in start order; NEXT_MS: the first
# start after the holder's (the fourth), from t0.
_check_log() {
  local log=$1 t0=$2
  ! grep -q OVERLAP "$log" || fail "two CMDs ran at once: $(cat -- "$log")"
  awk '$1 == "start" { if ($3 + 0 <= last + 0) { print "token " $3 " after " last; exit 1 } last = $3 }' \
    "$log" >"$T/verdict" || fail "tokens did not increase: $(cat -- "$T/verdict")"
  local us
  us=$(awk '$1 == "start" && ++n == 5 { print $4 }' "$log")
  [[ -n $us ]] || fail "no CMD ran after the holder's: $(cat -- "$log")"
  NEXT_MS=$((us / 1000 - t0))
}
