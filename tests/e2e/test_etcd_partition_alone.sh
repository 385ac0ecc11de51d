#!/usr/bin/env bash
# backends: sqlite
# A partition of the holder's member (src/backend/etcd/README.md, "Lost
# quorum"): on a 3-member cluster of the test's own whose peer traffic
# goes through fault proxies, the holder talks only to the leader, which
# is cut off from its peers while CMD runs (its clients still reach it;
# SIMBA_E2E_CUT=follower: the holder talks to a follower, which is cut).
# Its keep-alives reach a leader no more (the cut one steps down: "no
# leader"), so simba stops CMD at its kill point and exits 76
# (docs/exit-codes.md). A waiter on the majority's side gets the mutex
# only when the holder's lease ended on the new leader: after the
# holder's CMD is gone (its death as the kernel reports it, a pidfd).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/etcd_partition.sh"
partition_cluster_start
ttl=2 transition=1

SIMBA_BACKEND="etcd://127.0.0.1:${ETCD_CLIENT_PORTS[CUT]}/partition?timeout=500ms" \
  timeout -k 5 30 "$SIMBA" run --mutex m --ttl "${ttl}s" --transition "${transition}s" \
  -- sh -c "$HOLD_CMD" "$T/a" 20 2>"$T/a.err" &
a=$!
wait_line "$T/a.pid" 10 || fail "the holder's CMD did not start: $(<"$T/a.err")"
watch_death "$(<"$T/a.pid")" "$T/a.death" &
wait_file "$T/a.death.ready" 60 # python3 starts slowly on a loaded machine
SIMBA_BACKEND="etcd://$OTHERS/partition?timeout=500ms" \
  timeout -k 5 30 "$SIMBA" run --mutex m --ttl "${ttl}s" --transition "${transition}s" --timeout 25s \
  -- sh -c "$HOLD_CMD" "$T/b" 0 2>"$T/b.err" &
b=$!
sleep 0.3
partition_cut "$CUT"

rc=0 && wait "$a" || rc=$?
((rc == 76)) || fail "the holder's run: exit $rc, not 76 (its CMD should have been stopped): $(<"$T/a.err")"
wait "$b" || fail "the waiter's run failed ($?): $(<"$T/b.err")"
wait_line "$T/a.death" 5 || fail "no time of death of the holder's CMD"
a_end=$(($(<"$T/a.death") / 1000000)) b_start=$(<"$T/b.start")
echo "the holder's CMD died $((a_end - CUT_MS)) ms after the cut; the waiter's CMD started $((b_start - a_end)) ms after that" >&2
((b_start >= a_end)) || fail "two CMDs at once: the waiter's started $((a_end - b_start)) ms before the holder's died"
# Stopped at its kill point: at most the ttl after the last keep-alive
# that got through (KILL at the transition's end), which is no later than
# the cut leader's step-down (an election timeout, 500 ms, twice at most)
# after the cut; a second of slack for a loaded machine.
((a_end - CUT_MS <= (ttl + transition) * 1000 + 2000)) || fail "the holder's CMD died $((a_end - CUT_MS)) ms after the cut: past its deadline"
(($(<"$T/b.token") > $(<"$T/a.token"))) || fail "tokens: $(<"$T/a.token") then $(<"$T/b.token")"
