#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# FIFO through a quarantine (issue 31 §4): three waiters queue one after the
# other, then FLUSHALL takes the lease and the queue of waiters with it.
# The holder loses its lease; the waiters meet the quarantine, queue again
# with their first arrival time (lua/enqueue.lua), and when it ends only the
# first live waiter may take the mutex (core/fifo.hpp): the CMDs run in the
# order w1 w2 w3 (it was "third first second"). A server of the test's own:
# FLUSHALL there only.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis # skips like the others when Redis tests are off
start_own_redis
export SIMBA_BACKEND=$OWN_REDIS_URI

export ORDER
cmd='echo "$0" >>"$ORDER"; sleep 0.2'
terms=(--ttl 1s --transition 1s)
# The first lease of a fresh database waits out its quarantine.
"$SIMBA" run --mutex warm "${terms[@]}" -- true
for round in 1 2; do
  ORDER=$T/order.$round
  mutex=flush$round
  "$SIMBA" run --mutex "$mutex" "${terms[@]}" -- \
    sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$T/holder.$round" \
    2>>"$T/holder.err" &
  holder=$!
  wait_for 10 test -s "$T/holder.$round"
  queued() {
    (($("$SIMBA" status --mutex "$mutex" --format json | grep -o '"position"' | wc -l) == $1))
  }
  pids=()
  for w in 1 2 3; do
    "$SIMBA" run --mutex "$mutex" "${terms[@]}" --timeout 30s -- sh -c "$cmd" "w$w" \
      2>>"$T/waiters.err" &
    pids+=($!)
    wait_for 10 queued "$w"
    sleep 0.1
  done
  assert_eq "+OK" "$(redis_cmd FLUSHALL)" "FLUSHALL with three waiters queued"
  { wait "$holder"; } 2>/dev/null || true # it lost its lease
  for p in "${pids[@]}"; do wait "$p" || fail "a waiter exited $? (round $round)"; done
  got=$(tr '\n' ' ' <"$ORDER")
  assert_eq "w1 w2 w3 " "$got" "the order in which the waiters ran after FLUSHALL, round $round"
done
