# shellcheck shell=bash disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# Shared by the FIFO tests (test_fifo_*.sh; issue 31 §4): a holder and
# three waiters queued one after the other on a mutex; each waiter's CMD
# appends its name to $ORDER, so that the test can say in which order they
# ran. Source it after common.sh.
#
#   fifo_hold MUTEX ROUND [TERMS...]
#                           a holder whose CMD sleeps (its pid in
#                           $T/holder.ROUND); its simba's pid in $holder;
#                           TERMS instead of ${fifo_terms[@]} --kill-after 100ms
#   fifo_queue MUTEX        w1 w2 w3 queued on MUTEX, in that order (status
#                           shows each in the queue before the next starts);
#                           their pids in ${pids[@]}
#   fifo_ran_in_order WHAT  the waiters exited 0 and ran w1 w2 w3
export ORDER
fifo_terms=(--ttl 1s --transition 1s)

fifo_hold() {
  ORDER=$T/order.$2
  # --kill-after 100ms: the holder renews when its 1 s ttl ends and its CMD
  # is stopped at the kill point (the lease's end less --kill-after: half
  # the transition by default), so its renewal has about 0.8 s to come
  # back, not 0.4 s. Under load a holder that lost its lease let w1 in
  # while the waiters queued, and the count of queued waiters never came
  # (the *_fifo_queued timeouts of e2e-etcd, e2e-mysql). The lease's length,
  # and so each test's time, stay as they were.
  local terms=("${fifo_terms[@]}" --kill-after 100ms)
  (($# > 2)) && terms=("${@:3}")
  "$SIMBA" run --mutex "$1" "${terms[@]}" -- \
    sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$T/holder.$2" \
    2>>"$T/holder.err" &
  holder=$!
  wait_for 10 test -s "$T/holder.$2"
}

_fifo_queued() { # MUTEX N: N waiters in the queue
  (($("$SIMBA" status --mutex "$1" --format json | grep -o '"position"' | wc -l) == $2))
}

fifo_queue() {
  local w
  pids=()
  for w in 1 2 3; do
    "$SIMBA" run --mutex "$1" "${fifo_terms[@]}" --timeout 30s -- \
      sh -c 'echo "$0" >>"$ORDER"; sleep 0.2' "w$w" 2>>"$T/waiters.err" &
    pids+=($!)
    wait_for 10 _fifo_queued "$1" "$w"
    sleep 0.1
  done
}

fifo_ran_in_order() {
  local p
  for p in "${pids[@]}"; do wait "$p" || fail "a waiter exited $? ($1)"; done
  assert_eq "w1 w2 w3 " "$(tr '\n' ' ' <"$ORDER")" "the order in which the waiters ran $1"
}
