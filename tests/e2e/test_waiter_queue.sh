#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite
# A waiter's place in the queue (a file in <db>.notify/ named with its pid)
# exists while it waits, and goes once it owns the mutex and its CMD has
# started (simba leaves the queue a few milliseconds into CMD, off the path
# from the reply to CMD's start). Kept for the whole run, a release by a
# later owner would wake this process instead of a waiter.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

notify="$T/simba.db.notify"
# The holder holds until the test has seen the waiter queued (at most 20 s).
"$SIMBA" run --mutex m -- sh -c 'touch "$0"; i=0; while [ ! -e "$1" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done' \
  "$T/holding" "$T/go" &
holder=$!
wait_file "$T/holding" 10
"$SIMBA" run --mutex m -- sh -c 'sleep 0.3; ls "$1" >"$0"' "$T/later" "$notify" &
waiter=$!

# "<hash>.w.<enqueue ns>.<pid>", and "~<ms>" when it gives up (--timeout).
places() { ls "$notify" 2>/dev/null | grep -Ec "\.w\..*\.$waiter(~[0-9]+)?\$" || true; }
queued() { test "$(places)" = 1; }
wait_for 15 queued
touch "$T/go"
rc=0
wait "$waiter" || rc=$?
assert_eq 0 "$rc" "waiter's exit status"
wait "$holder"
test -s "$T/later" || fail "the waiter's CMD did not list $notify"
if grep -Eq "\.w\..*\.$waiter(~[0-9]+)?\$" "$T/later"; then
  fail "the owner still held its place in the waiters' queue 300 ms into its CMD: $(tr '\n' ' ' <"$T/later")"
fi
assert_eq 0 "$(places)" "places of the waiter left after it exited"

# A waiter that gives up (--timeout) leaves its place as simba exits (the
# backend's destructor: no operation does it), so that no release wakes a
# process that is gone while a live waiter sleeps.
"$SIMBA" run --mutex m2 -- sh -c 'touch "$0"; exec sleep 30' "$T/holding2" &
holder2=$!
wait_file "$T/holding2" 10
"$SIMBA" run --mutex m2 --timeout 1s -- true 2>/dev/null &
waiter=$!
wait_for 15 queued
rc=0
wait "$waiter" || rc=$?
assert_eq 75 "$rc" "exit status of the waiter that gave up"
assert_eq 0 "$(places)" "places of the waiter that gave up, after it exited"
kill -TERM "$holder2"
wait "$holder2" || true
