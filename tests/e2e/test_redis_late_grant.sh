#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# A grant that comes after the handed lease ran out (chaos/sentinel, seed
# 1821674248: a slow link delayed the hand-over's message by 2 s). A holds
# the grant, B queued behind it. A's renewal reaches Redis after the lease's
# end, while B, first in the queue now, lives: the FIFO gate (core/fifo.hpp)
# refuses A. The refusal used to show A its own lease, valid again until the
# gate's end, with its old token: A started CMD on a lease it no longer had,
# and B took the mutex and started its own (in the chaos run both ran at
# once). A refused waiter is now shown the lease with no owner: it waits,
# B runs, then A. (A short --kill-after, so that the old reply left A time
# to start CMD rather than renew again: "acquire reply came too late".)
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/fifo_common.sh"
use_test_redis

m=late-grant
ORDER=$T/order
"$SIMBA" run --mutex $m "${fifo_terms[@]}" -- \
  sh -c 'touch "$0/held"; while [ ! -e "$0/release" ]; do sleep 0.02; done' "$T" \
  2>"$T/holder.err" &
holder=$!
wait_file "$T/held" 10
waiter() { # NAME: queued behind those before it; its CMD appends NAME to $ORDER
  "$SIMBA" run --mutex $m "${fifo_terms[@]}" --kill-after 100ms --contender-id "$1" \
    --timeout 30s -v -- sh -c 'echo "$0" >>"$ORDER"; sleep 0.3' "$1" 2>"$T/$1.err" &
}
waiter A
pid_A=$!
wait_for 10 _fifo_queued $m 1
waiter B
pid_B=$!
wait_for 10 _fifo_queued $m 2
# Both stop; B stays queued and live (its subscription stays open). The
# holder's release hands the mutex over to A, whose grant waits unread.
kill -STOP "$pid_A" "$pid_B"
touch "$T/release"
wait "$holder" || fail "the holder exited $?: $(<"$T/holder.err")"
[[ $(mutex_field $m label) == A ]] || fail "the mutex was not handed to A: $("$SIMBA" status --mutex $m --json)"
# The handed lease ends 2 s after the release (ttl + transition); the gate
# keeps the mutex for B for 1 s more. A comes back early in that second.
at=$(($(mutex_field $m transition_remaining_ms) + 100))
sleep "$((at / 1000)).$(printf %03d $((at % 1000)))"
kill -CONT "$pid_A"
sleep 0.3
kill -CONT "$pid_B"
# (wait would answer 147, the stop, while the jobs are seen stopped)
wait_for 30 pid_dead "$pid_B"
wait_for 30 pid_dead "$pid_A"
wait "$pid_B" || fail "B exited $?: $(<"$T/B.err")"
# The old reply: A ran CMD, its first guard found the lease gone, exit 76.
wait "$pid_A" || fail "A exited $? (order $(tr '\n' ' ' <"$ORDER")): $(<"$T/A.err")"
! grep -q 'ownership of' "$T/A.err" || fail "A ran CMD on a lease it no longer had: $(<"$T/A.err")"
