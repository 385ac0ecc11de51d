#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres redis-cluster etcd mysql
# Release notification (DESIGN §3): a waiter takes over within milliseconds of
# an explicit release instead of sleeping until its timed wake-up. With the
# default ttl 10s + transition 2s, the timed wake-up would come ~12 s after
# the holder's acquisition; the waiter must get in within 1.5 s of the
# holder's CMD finishing.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

# The holder's CMD records when it finishes; the waiter's CMD when it starts.
"$SIMBA" run --mutex m -- sh -c 'touch "$0"; sleep 2; date +%s%3N >"$1"' \
  "$T/holding" "$T/released" &
holder=$!
wait_file "$T/holding" 10
# Started while the holder holds: its first attempt fails, its timed
# wake-up is ~12 s away.
"$SIMBA" run --mutex m -- sh -c 'date +%s%3N >"$0"' "$T/acquired" &
waiter=$!

# Long enough for the timed wake-up, so that a missing notification shows
# as a gap below rather than a time-out here.
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
