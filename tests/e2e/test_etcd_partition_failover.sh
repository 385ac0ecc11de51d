#!/usr/bin/env bash
# backends: sqlite
# A partition of the holder's member when simba knows the others
# (src/backend/etcd/client.cpp: the next member on a failure): on a
# 3-member cluster of the test's own whose peer traffic goes through fault
# proxies, the holder's first endpoint is the leader, which is cut off from
# its peers while CMD runs (its clients still reach it: a stale leader,
# then a member without one; SIMBA_E2E_CUT=follower: a follower). simba's calls to it fail or time out and go
# to a member of the majority, which elects a new leader that keeps the
# lease: CMD runs to its end (exit 0, never stopped). A waiter on the
# majority's side starts only after the holder's CMD is gone (its death as
# the kernel reports it, a pidfd), with a larger token.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/etcd_partition.sh"
partition_cluster_start
# The guard, due every 2 s, has about 1.8 s before the kill point (the
# transition less the kill-after, half of it, and the margin) for a call
# that times out (500 ms) on the cut member and the next ones on the
# majority while it elects a leader, on a loaded machine. (With --ttl 3s
# --transition 2s, 350 ms were left after the time-out: CMD was stopped
# in 2 of 6 runs.)
opts=(--mutex m --ttl 2s --transition 4s)

SIMBA_BACKEND="etcd://127.0.0.1:${ETCD_CLIENT_PORTS[CUT]},$OTHERS/partition?timeout=500ms" \
  timeout -k 5 30 "$SIMBA" run "${opts[@]}" -- sh -c "$HOLD_CMD" "$T/a" 4 2>"$T/a.err" &
a=$!
wait_line "$T/a.pid" 10 || fail "the holder's CMD did not start: $(<"$T/a.err")"
watch_death "$(<"$T/a.pid")" "$T/a.death" &
wait_file "$T/a.death.ready" 60 # python3 starts slowly on a loaded machine
SIMBA_BACKEND="etcd://$OTHERS/partition?timeout=500ms" \
  timeout -k 5 30 "$SIMBA" run "${opts[@]}" --timeout 25s -- sh -c "$HOLD_CMD" "$T/b" 0 2>"$T/b.err" &
b=$!
sleep 0.3
partition_cut "$CUT"

wait "$a" || fail "the holder's run failed ($?): $(<"$T/a.err")"
wait "$b" || fail "the waiter's run failed ($?): $(<"$T/b.err")"
! grep -q "lost\|stopping" "$T/a.err" || fail "the holder lost its lease: $(<"$T/a.err")"
wait_line "$T/a.death" 5 || fail "no time of death of the holder's CMD"
a_end=$(($(<"$T/a.death") / 1000000)) a_start=$(<"$T/a.start") b_start=$(<"$T/b.start")
((a_end - a_start >= 4000)) || fail "the holder's CMD ran $((a_end - a_start)) ms of its 4 s"
((b_start >= a_end)) || fail "two CMDs at once: the waiter's started $((a_end - b_start)) ms before the holder's died"
(($(<"$T/b.token") > $(<"$T/a.token"))) || fail "tokens: $(<"$T/a.token") then $(<"$T/b.token")"
echo "the holder's CMD ran to its end, $((a_end - CUT_MS)) ms after the cut; the waiter's started $((b_start - a_end)) ms after that" >&2
