#!/usr/bin/env bash
# backends: sqlite redis postgres etcd mysql
# FIFO on the timed path (issue 31 §4): three waiters queue one after the
# other, then the holder's simba is killed -9 (its CMD dies with it). Its
# lease runs out with nobody to release it, and every waiter's timer fires
# at about its end: the first to call acquire used to win (w3 w1 w2, w2 w1
# w3). Only the first live waiter may take an expired lease (core/fifo.hpp):
# the CMDs run in the order w1 w2 w3, in each of three rounds. The releases of
# w1 and w2 come while the others' timers fire: a release too goes to the
# next in line only (w1 w3 w2 on PostgreSQL under load before it did).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

source "$(dirname -- "${BASH_SOURCE[0]}")/fifo_common.sh"

# The three rounds run side by side, each on a mutex of its own (their
# holders, waiters and order files are the round's): three races at the
# lease's end, as before, in a third of the time.
one_round() {
  local round=$1
  fifo_hold "fifo$round" "$round"
  fifo_queue "fifo$round"
  kill -KILL "$holder"
  { wait "$holder"; } 2>/dev/null || true # no "Killed" job notice
  wait_for 5 pid_dead "$(<"$T/holder.$round")"
  fifo_ran_in_order "(round $round)"
}
rounds=()
for round in 1 2 3; do
  one_round "$round" &
  rounds+=($!)
done
for round in 1 2 3; do
  wait "${rounds[round - 1]}" || fail "round $round failed (above)"
done
