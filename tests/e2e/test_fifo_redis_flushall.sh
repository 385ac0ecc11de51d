#!/usr/bin/env bash
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

source "$(dirname -- "${BASH_SOURCE[0]}")/fifo_common.sh"

# The two rounds run side by side, each in a directory ($T) and on a server
# of its own (FLUSHALL there only).
one_round() {
  local round=$1
  T=$T/round$round
  mkdir -p -- "$T"
  start_own_redis
  export SIMBA_BACKEND=$OWN_REDIS_URI
  # The first lease of a fresh database would wait a quarantine: the
  # server just started is marked new.
  assert_exit 0 "$SIMBA" doctor --init
  "$SIMBA" run --mutex warm "${fifo_terms[@]}" -- true
  fifo_hold "flush$round" "$round"
  fifo_queue "flush$round"
  assert_eq "+OK" "$(redis_cmd FLUSHALL)" "FLUSHALL with three waiters queued"
  { wait "$holder"; } 2>/dev/null || true # it lost its lease
  fifo_ran_in_order "after FLUSHALL, round $round"
}
rounds=()
for round in 1 2; do
  one_round "$round" &
  rounds+=($!)
done
for round in 1 2; do
  wait "${rounds[round - 1]}" || fail "round $round failed (above)"
done
