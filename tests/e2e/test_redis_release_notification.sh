#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# Release notification over Redis pub/sub (DESIGN §3): a waiter takes over
# within 1.5 s of the holder's release, not at its timed wake-up (~12 s with
# the default ttl 10s + transition 2s).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis

"$SIMBA" run --mutex m -- sh -c 'touch "$0"; sleep 2; date +%s%3N >"$1"' \
  "$T/holding" "$T/released" &
holder=$!
wait_file "$T/holding" 10
"$SIMBA" run --mutex m -- sh -c 'date +%s%3N >"$0"' "$T/acquired" &
waiter=$!

wait_for 16 test -s "$T/acquired"
wait_for 5 pid_dead "$waiter"
rc=0
wait "$waiter" || rc=$?
assert_eq 0 "$rc" "waiter's exit status"
rc=0
wait "$holder" || rc=$?
assert_eq 0 "$rc" "holder's exit status"

released=$(<"$T/released")
acquired=$(<"$T/acquired")
gap=$((acquired - released))
echo "waiter's CMD started ${gap} ms after the holder's CMD finished" >&2
((gap >= 0)) || fail "the waiter's CMD started ${gap#-} ms BEFORE the holder's CMD finished"
((gap <= 1500)) ||
  fail "the waiter took ${gap} ms to take over after the release (expected < 1500 ms: no release notification?)"
