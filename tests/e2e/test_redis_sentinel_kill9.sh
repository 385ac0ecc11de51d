#!/usr/bin/env bash
# Redis Sentinel (docs/backends/redis.md "Redis Sentinel"): kill -9 of the master while a
# lease is held that never reached the replica (cut off from the master
# meanwhile), a waiter is queued and fresh contenders keep trying; the
# holder's simba is paused at the kill, as if cut off from the new master,
# so only its watchdog stops CMD at the end of the lease. After
# down-after-milliseconds (1 s) the sentinels promote the replica, which
# lacks the lease: nobody may get the mutex before the quarantine of the
# promoted replica (a server run of its own) has passed. Never two CMDs at
# once, tokens keep increasing, the holder exits 76, and the next CMD
# starts within the bound.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/sentinel_common.sh"
needs_backend redis
needs redis-server redis-cli

# Leases longer than the failover: without the quarantine a contender
# would get the mutex from the new master while CMD still runs.
held_lease_scenario kill9 300 '--ttl 5s --transition 2s'
[[ $(master_port) == "$REPLICA_PORT" ]] || fail "no failover: the master is still $(master_port)"
assert_eq 76 "$HOLDER_RC" "exit status of the holder whose lease the failover lost"
echo "holder exit $HOLDER_RC after ${HOLDER_END_MS} ms, next CMD ${NEXT_MS} ms after the kill" >&2
# Bound: down-after (1 s) + the failover (~1-2 s) + the quarantine (the
# longest lease, 7 s, + 1 s), + 3 s for a loaded machine.
((NEXT_MS <= 14000)) || fail "the next CMD started ${NEXT_MS} ms after the kill (bound 14 s)"
