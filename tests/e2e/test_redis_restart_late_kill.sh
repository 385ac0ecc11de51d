#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# A holder that outlives a restart of Redis from a fresh snapshot (its lease
# is in it) and is killed -9 later: a waiter's look after the restart starts
# the quarantine (the longest lease, 2 s + 1 s, + 1 s), so once it is over
# the holder is followed when its lease ends (at most ttl + transition,
# 3 s), not after its lease and a whole quarantine more (~7 s: the
# quarantine started only when the mutex was free; the chaos runs'
# failovers of 4-5 s). A server of the test's own: no longer lease known.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis # skips like the others when Redis tests are off
start_own_redis
export SIMBA_BACKEND=$OWN_REDIS_URI

# The first lease of a fresh database would wait a quarantine: the server
# just started is marked new.
assert_exit 0 "$SIMBA" doctor --init
"$SIMBA" run --mutex late --ttl 2s --transition 1s -- true
"$SIMBA" run --mutex late --ttl 2s --transition 1s -- \
  sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$T/late.pid" &
holder=$!
wait_for 10 test -s "$T/late.pid"
"$SIMBA" run --mutex late --ttl 2s --transition 1s --timeout 30s -- \
  sh -c 'date +%s%3N >"$0"' "$T/late.start" 2>"$T/late.err" &
waiter=$!
sleep 0.5
assert_eq "+OK" "$(redis_cmd SAVE)" "SAVE with the holder's lease"
kill -KILL "$OWN_REDIS_PID"
wait "$OWN_REDIS_PID" 2>/dev/null || true
restart_own_redis
sleep 6
expect_follow_after_kill "$holder" "$waiter"
