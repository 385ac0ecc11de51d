#!/usr/bin/env bash
# Redis Sentinel: a master that fails over and back without a restart keeps
# its run_id, and its data is now what the replica had (it may lack a lease
# the old run granted): the server run of a Sentinel URI carries the
# replication id, which every promotion renews, so the first lease after
# the failback waits the quarantine (docs/backends/redis.md "Redis Sentinel").
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/sentinel_common.sh"
needs_backend redis
needs redis-server redis-cli

start_sentinel_group
export SIMBA_BACKEND=$SENTINEL_URI
# The marker now names the first master's run: doctor --init (the group was
# just started) writes it, and the warm-up's lease, granted at once, shows
# that the scripts take it as this run's (a fresh database waited once).
"$SIMBA" doctor --init >/dev/null || fail "doctor --init refused the new group's master"
t0=$(now_ms)
"$SIMBA" run --mutex warm-up --ttl 1s --transition 1s -- true
(($(now_ms) - t0 < 2500)) || fail "the warm-up after doctor --init waited a quarantine"

# failover_to PORT: SENTINEL FAILOVER until PORT is the master and the other
# server its replica, in sync (a failover is refused while the last one is
# not finished).
failover_to() {
  local deadline=$(($(now_ms) + 40000)) other=$2
  until [[ $(master_port) == "$1" ]]; do
    (($(now_ms) < deadline)) || fail "no failover to $1"
    rcli "${SENTINEL_PORTS[0]}" SENTINEL FAILOVER mymaster >/dev/null
    sleep 0.5
  done
  # What Sentinel does itself once the demoted master has reported its
  # old role for 8 s (SENTINEL_PUBLISH_PERIOD * 4), and then only at its
  # next INFO: the same REPLICAOF at once.
  rcli "$other" REPLICAOF 127.0.0.1 "$1" >/dev/null
  wait_for 40 _replica_of "$other" "$1"
}
_replica_of() {
  rcli "$1" INFO replication | grep -q "master_port:$2" &&
    rcli "$1" INFO replication | grep -q 'master_link_status:up'
}

failover_to "$REPLICA_PORT" "$MASTER_PORT"
failover_to "$MASTER_PORT" "$REPLICA_PORT"
t0=$(now_ms)
"$SIMBA" run --mutex m --ttl 1s --transition 1s -- true
dt=$(($(now_ms) - t0))
echo "first lease after the failback: ${dt} ms" >&2
# The quarantine: the longest lease (2 s) + 1 s.
((dt >= 2500)) || fail "the first lease after the failback came after ${dt} ms: no quarantine"
