#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the CMD script
# backends: sqlite redis postgres pgbouncer etcd mysql
# The owner-safety rule of DESIGN §4, timed: a leader whose simba is
# SIGSTOPped after a renewal. Its CMD ignores SIGTERM, so only the
# watchdog's SIGKILL at the deadline (counted from the renewal's send, less
# the margin) ends it. CMD itself records its heartbeats, and the lease's
# end is what `simba status --json` shows (one machine, one wall clock):
#  * the old CMD's last heartbeat is before transition_at less the margin's
#    clock part (2 ms + 1% of ttl + transition; the 100 ms of kill latency
#    in the margin are left for the SIGKILL to land on a loaded machine);
#  * while the stopped leader's lease is between ttl_at and transition_at,
#    a newcomer (`simba run --no-wait`) is refused: the takeover waits for
#    transition_at, not ttl_at;
#  * a second `simba lead`, started then too, starts its CMD no earlier
#    than transition_at (and after the old CMD's last heartbeat), and not
#    much later either.
# test_lead_one_leader checks one CMD at a time with kill -9, where the
# kernel ends CMD at once; it cannot see a deadline that is too late.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/leader_common.sh"
needs jq

log=$T/log
# CMD: leader_common.sh's beating CMD (a SIGKILL alone ends it; OVERLAP
# as in test_lead_one_leader).
write_beating_cmd "$T/cmd.sh"


# ttl 1 s, transition 2 s: the stopped leader's lease ends 2 s after its
# ttl; kill-after stays half the transition (it plays no part here: the
# stopped simba sends no SIGTERM, only the watchdog kills). The leader is
# alone at first: no waiter is queued, so nothing but the lease's end
# keeps the newcomers below out (a queued waiter would be first in line).
lead=(lead --mutex m --ttl 1s --transition 2s -- bash "$T/cmd.sh" "$log" "$T")
"$SIMBA" "${lead[@]}" 2>"$T/err.1" &
leader=$!
wait_for 10 starts_at_least "$log" 1
read -r _ cmd1 parent1 token1 _ < <(grep '^start ' "$log")
assert_eq "$leader" "$parent1" "parent of the first CMD"

# Stop it right after a renewal (the lease changed): the deadline the
# watchdog holds is then a renewal's, not the acquisition's.
first=$(lease_times m)
wait_for 5 renewed_since m "$first"
kill -STOP "$leader"
wait_for 2 is_stopped "$leader"
stopped_ms=$(now_ms)
# The lease, read while it is in its ttl. A renewal sent just before the
# SIGSTOP and applied after this read moves the lease, not the watchdog's
# deadline (the stopped simba never reads its reply): the times read here
# stay the ones the deadline is counted against, or later.
sleep 0.1
read -r ttl_at transition_at < <(lease_times m)
[[ $ttl_at =~ ^[0-9]+$ && $transition_at =~ ^[0-9]+$ ]] ||
  fail "no lease times in status: [$ttl_at] [$transition_at]"

# A newcomer between ttl_at and transition_at is refused.
while (($(now_ms) < ttl_at + 200)); do sleep 0.05; done
probe_at=$(now_ms)
assert_exit 75 "$SIMBA" run --no-wait --mutex m -- sh -c 'echo "probe $(date +%s%6N)" >>"$1"' sh "$log"
probe_done=$(now_ms)
echo "newcomer refused $((probe_at - ttl_at))..$((probe_done - ttl_at)) ms after ttl_at ($((transition_at - probe_done)) ms before transition_at)" >&2
grep -q '^probe' "$log" && fail "a newcomer ran its CMD before transition_at"
# The next leader arrives now, still before transition_at: refused at
# first, it must wait for the lease's end.
"$SIMBA" "${lead[@]}" 2>"$T/err.2" &
other=$!

wait_for $((transition_at / 1000 - stopped_ms / 1000 + 2)) pid_dead "$cmd1"
wait_for 5 starts_at_least "$log" 2
check_overlap() {
  if grep -q '^OVERLAP' "$log"; then
    cat -- "$log" >&2
    fail "a CMD started while another CMD was still running"
  fi
}
check_overlap
read -r _ _ leader2 token2 start2 < <(grep '^start ' "$log" | sed -n 2p)
last_beat=$(tail -n 1 "$T/beats.$cmd1")
# The margin's clock part: 2 ms + 1% of (ttl + transition).
clock_margin_us=$(((2 + 3000 / 100) * 1000))
end_us=$((transition_at * 1000))
echo "old CMD's last heartbeat $(((end_us - last_beat) / 1000)) ms before transition_at; new CMD started $(((start2 - end_us) / 1000)) ms after it (token $token1 -> $token2)" >&2
((last_beat <= end_us - clock_margin_us)) ||
  fail "the stopped leader's CMD ran until $(((end_us - last_beat) / 1000)) ms before its lease's end (negative: after it) (transition_at); expected dead $((clock_margin_us / 1000)) ms before it"
((start2 >= end_us)) || fail "the new CMD started $(((end_us - start2) / 1000)) ms before the old lease's end"
((start2 > last_beat)) || fail "the new CMD started before the old CMD's last heartbeat"
assert_eq "$other" "$leader2" "parent of the new CMD"
((token2 > token1)) || fail "fencing token did not increase: $token1 -> $token2"
# Not too late either: the waiter's jitter (< 1 s) and 1.5 s of slack;
# etcd ends a lease a second later, at its next check (docs/backends/etcd.md).
late_ms=2500
[[ ${SIMBA_E2E_BACKEND:-} == etcd ]] && late_ms=$((late_ms + 1500))
((start2 <= end_us + late_ms * 1000)) ||
  fail "the new CMD started $(((start2 - end_us) / 1000)) ms after the old lease's end (expected <= $late_ms ms)"

# Both CMDs ignore SIGTERM: kill -9 ends the simbas and, with them, their
# CMDs at once (rather than the exit trap's SIGTERM and 2 s wait).
kill -KILL "$leader" "$other" 2>/dev/null || true
{ wait "$leader" "$other"; } 2>/dev/null || true
