#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# A redis-server paused (SIGSTOP) for longer than the transition: every
# guard times out (indeterminate), and the holder's CMD is stopped before
# transition_at, i.e. within ttl + transition of the last renewal; simba
# exits 76 and never hangs.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis
start_own_redis
export SIMBA_BACKEND=$OWN_REDIS_URI
# The server just started is marked new: its first lease waits no quarantine.
assert_exit 0 "$SIMBA" doctor --init

"$SIMBA" run --mutex m --ttl 1s --transition 1s -- \
  sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$T/child.pid" &
holder=$!
wait_for 10 test -s "$T/child.pid"
child=$(<"$T/child.pid")

t0=$(now_ms)
kill -STOP "$OWN_REDIS_PID"
# The last renewal happened before t0: CMD must be gone within
# ttl + transition (2 s) of it, i.e. before transition_at. We see it up to
# one poll (50 ms) plus scheduling later: 250 ms of slack for that.
wait_for 3 pid_dead "$child"
dt=$(($(now_ms) - t0))
echo "CMD stopped ${dt} ms after redis-server was paused" >&2
((dt <= 2250)) || fail "CMD outlived the lease: seen gone ${dt} ms after the pause (ttl + transition = 2000 ms)"
wait_for 5 pid_dead "$holder"
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of simba whose renewals went unanswered"
kill -CONT "$OWN_REDIS_PID"
