#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres
# FIFO on the timed path (issue 31 §4): three waiters queue one after the
# other, then the holder's simba is killed -9 (its CMD dies with it). Its
# lease runs out with nobody to release it, and every waiter's timer fires
# at about its end: the first to call acquire used to win (w3 w1 w2, w2 w1
# w3). Only the first live waiter may take an expired lease (core/fifo.hpp):
# the CMDs run in the order w1 w2 w3, round after round.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

export ORDER
cmd='echo "$0" >>"$ORDER"; sleep 0.2'
terms=(--ttl 1s --transition 1s)
for round in 1 2 3; do
  ORDER=$T/order.$round
  mutex=fifo$round
  "$SIMBA" run --mutex "$mutex" "${terms[@]}" -- \
    sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$T/holder.$round" &
  holder=$!
  wait_for 10 test -s "$T/holder.$round"
  queued() {
    (($("$SIMBA" status --mutex "$mutex" --format json | grep -o '"position"' | wc -l) == $1))
  }
  pids=()
  for w in 1 2 3; do
    "$SIMBA" run --mutex "$mutex" "${terms[@]}" -- sh -c "$cmd" "w$w" 2>>"$T/waiters.err" &
    pids+=($!)
    wait_for 10 queued "$w"
    sleep 0.1
  done
  kill -KILL "$holder"
  { wait "$holder"; } 2>/dev/null || true # no "Killed" job notice
  wait_for 5 pid_dead "$(<"$T/holder.$round")"
  for p in "${pids[@]}"; do wait "$p" || fail "a waiter exited $? (round $round)"; done
  got=$(tr '\n' ' ' <"$ORDER")
  assert_eq "w1 w2 w3 " "$got" "the order in which the waiters ran, round $round"
done
