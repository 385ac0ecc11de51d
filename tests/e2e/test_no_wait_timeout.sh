#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd mysql
# While another simba holds the mutex: --no-wait exits 75 at once,
# --timeout 1s exits 75 after about 1 s; a waiter without a timeout gets in
# right after the holder finishes (and not before).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

"$SIMBA" run --mutex m -- sh -c 'touch "$0"; exec sleep 60' "$T/holding" &
holder=$!
wait_file "$T/holding" 10

t0=$(now_ms)
assert_exit 75 simba_bounded run --mutex m --no-wait -- touch "$T/ran"
dt=$(($(now_ms) - t0))
((dt < 2000)) || fail "--no-wait took ${dt} ms to give up (expected at once)"

t0=$(now_ms)
assert_exit 75 simba_bounded run --mutex m --timeout 1s -- touch "$T/ran"
dt=$(($(now_ms) - t0))
((dt >= 800 && dt <= 5000)) || fail "--timeout 1s gave up after ${dt} ms (expected about 1 s)"
[[ ! -e $T/ran ]] || fail "CMD ran although the mutex was never acquired"
assert_eq held "$(mutex_state m)" "the holder still holds m"

kill -TERM "$holder"
rc=0
wait "$holder" || rc=$?
assert_eq 143 "$rc" "holder stopped by SIGTERM"

# A waiter gets in right after a holder that runs `sleep 1` finishes; its
# CMD checks that the holder's CMD is done.
"$SIMBA" run --mutex m -- sh -c 'touch "$0"; sleep 1; touch "$1"' "$T/holding2" "$T/holder-done" &
holder=$!
wait_file "$T/holding2" 10
t0=$(now_ms)
"$SIMBA" run --mutex m -- sh -c 'test -e "$0"' "$T/holder-done" &
waiter=$!
wait_for 3.5 pid_dead "$waiter"
dt=$(($(now_ms) - t0))
rc=0
wait "$waiter" || rc=$?
assert_eq 0 "$rc" "waiter's exit status (1: it ran before the holder's CMD finished)"
rc=0
wait "$holder" || rc=$?
assert_eq 0 "$rc" "holder's exit status"
echo "waiter finished ${dt} ms after it started (holder ran sleep 1)" >&2
assert_eq free "$(mutex_state m)" "mutex m at the end"
