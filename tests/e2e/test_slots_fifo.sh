#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd mysql
# --slots 2: waiters queue in one line for both slots. Two holders, then
# four waiters that join the queue one after the other; as each slot frees,
# the longest waiting one gets it: the CMDs start in the order w1 w2 w3 w4,
# and a latecomer trying all along gets none of them.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

export ORDER=$T/order
# CMD: "$0" its name; records it, then runs until the file go.<name> exists.
cmd='echo "$0" >>"$ORDER"; while [ ! -e "$ORDER.go.$0" ]; do sleep 0.05; done'
for h in h1 h2; do
  "$SIMBA" run --mutex m --slots 2 -- sh -c "$cmd" "$h" 2>/dev/null &
done
started() { (($(wc -l <"$ORDER" 2>/dev/null || echo 0) >= $1)); }
wait_for 10 started 2
queued() { (($("$SIMBA" status --mutex m --format json | grep -o '"position"' | wc -l) == $1)); }
pids=()
for w in 1 2 3 4; do
  "$SIMBA" run --mutex m --slots 2 -- sh -c "$cmd" "w$w" 2>/dev/null &
  pids+=($!)
  wait_for 10 queued "$w"
done
# A latecomer tries again and again meanwhile (--no-wait): a slot that
# frees is the next waiter's, never the latecomer's (no barging).
(
  while [[ ! -e $ORDER.stop ]]; do
    "$SIMBA" run --mutex m --slots 2 --no-wait -- sh -c "$cmd" late 2>/dev/null || true
    sleep 0.01
  done
) &
late=$!
# Each slot that frees goes to the next in line.
n=2
for done_one in h1 h2 w1 w2; do
  touch "$ORDER.go.$done_one"
  n=$((n + 1))
  wait_for 10 started "$n"
done
touch "$ORDER.stop" "$ORDER.go.late"
wait "$late"
touch "$ORDER.go.w3" "$ORDER.go.w4"
for p in "${pids[@]}"; do wait "$p" || fail "a waiter exited $?"; done
got=$(tail -n +3 "$ORDER" | tr '\n' ' ')
assert_eq "w1 w2 w3 w4 " "$got" "the order in which the waiters' CMDs started"
