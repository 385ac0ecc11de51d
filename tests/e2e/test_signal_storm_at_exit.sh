#!/usr/bin/env bash
# backends: sqlite redis
# A storm of USR1 (forwarded to CMD, which ignores it) that goes on across
# CMD's exit: simba still exits with CMD's status, never by USR1. Only a
# stop signal (TERM, INT, HUP) ends simba by a signal. (simba once restored
# its signal mask on the way out, after the release, and the next USR1
# killed it: status 138 instead of CMD's 7.)
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

for i in 1 2 3 4 5; do
  rm -f -- "$T/started"
  "$SIMBA" run --mutex storm -- sh -c 'trap "" USR1; touch "$1"; sleep 0.3; exit 7' sh \
    "$T/started" 2>"$T/err.$i" &
  pid=$!
  wait_file "$T/started" 30
  # the storm: until simba is gone (a stray kill after its exit is harmless:
  # the pid is this test's child until `wait` reaps it)
  (while kill -USR1 "$pid" 2>/dev/null; do :; done) &
  storm=$!
  rc=0
  wait "$pid" || rc=$?
  kill "$storm" 2>/dev/null || true
  wait "$storm" 2>/dev/null || true
  assert_eq 7 "$rc" "exit status of simba after a USR1 storm across CMD's exit (try $i; $(<"$T/err.$i"))"
done
assert_eq free "$(mutex_state storm)" "the mutex after the storms"
