#!/usr/bin/env bash
# Redis Sentinel (docs/backends/redis.md "Redis Sentinel"): a master, a replica and three
# sentinels on loopback. Runs and a hand-over through redis+sentinel://;
# then SENTINEL FAILOVER while a lease is held, a waiter is queued and fresh
# contenders keep trying: the holder keeps running (its lease reached the
# replica, which is now the master) or is stopped (exit 76), never two CMDs
# at once, tokens keep increasing, and the next CMD starts within the bound.
# The old master takes writes for ~10 s more (Sentinel's split brain): a
# client that stayed on it would renew there while the new master grants
# the mutex to a contender (sentinel.hpp, k_sentinel_confirm_ms).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/sentinel_common.sh"
needs_backend redis
needs redis-server redis-cli

# The holder's CMD ends ~10 s after the failover: after the stale copy of
# its lease on the new master and the quarantine would have let a contender
# in, before Sentinel turns the old master into a replica (~11 s).
held_lease_scenario failover 10.5
[[ $(master_port) == "$REPLICA_PORT" ]] || fail "no failover: the master is still $(master_port)"
[[ $HOLDER_RC == 0 || $HOLDER_RC == 76 ]] || fail "holder: exit $HOLDER_RC"
[[ $WAITER_RC == 0 ]] || fail "waiter: exit $WAITER_RC"
echo "holder exit $HOLDER_RC after ${HOLDER_END_MS} ms, next CMD ${NEXT_MS} ms after the failover" >&2
# Bound: the holder's CMD (10 s) + the quarantine on the new master (the
# longest lease, 4 s, + 1 s) + 2 s for a loaded machine.
((NEXT_MS <= 17000)) || fail "the next CMD started ${NEXT_MS} ms after the failover (bound 17 s)"
