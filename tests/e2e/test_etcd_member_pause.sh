#!/usr/bin/env bash
# backends: sqlite
# A member that goes silent (SIGSTOP: a hung host, or one cut off) while
# simba talks to it: simba's calls to it time out, and the next ones go to
# another member (src/backend/etcd/client.cpp). On a 3-member cluster of
# the test's own, the member a holder talks to is stopped for 4 s: the
# holder's guards get through elsewhere and its CMD runs to its end (exit
# 0); a waiter starts only after it, with a larger token. A 3 s lease: a
# guard that times out (500 ms) must still have time for another member
# on a loaded machine.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs etcd
source "$(dirname -- "${BASH_SOURCE[0]}")/etcd_server.sh"
etcd_cluster_start "$T/etcd" || fail "cannot start an etcd cluster: $(tail -n 5 "$T"/etcd/m0.log)"
p=("${ETCD_CLIENT_PORTS[@]}")
export SIMBA_BACKEND="etcd://127.0.0.1:${p[0]},127.0.0.1:${p[1]},127.0.0.1:${p[2]}/pause?timeout=500ms"

# CMD: the start and end (ms) and the token in FILE.start/.end/.token
# shellcheck disable=SC2016 # for sh -c
cmd='date +%s%3N >"$0.start"; echo "$SIMBA_FENCING_TOKEN" >"$0.token"; sleep "$1"; date +%s%3N >"$0.end"'
"$SIMBA" run --mutex m --ttl 3s --transition 2s -- sh -c "$cmd" "$T/a" 4 2>"$T/a.err" &
a=$!
wait_file "$T/a.start" 10
"$SIMBA" run --mutex m --ttl 3s --transition 2s --timeout 30s -- sh -c "$cmd" "$T/b" 0 2>"$T/b.err" &
b=$!
sleep 0.3
kill -STOP "${ETCD_PIDS[0]}" # the member both talk to first
sleep 4
kill -CONT "${ETCD_PIDS[0]}"

wait "$a" || fail "the holder's run failed ($?): $(<"$T/a.err")"
wait "$b" || fail "the waiter's run failed ($?): $(<"$T/b.err")"
[[ -s $T/a.end ]] || fail "the holder's CMD did not run to its end: $(<"$T/a.err")"
! grep -q "lost\|stopping" "$T/a.err" || fail "the holder lost its lease: $(<"$T/a.err")"
a_end=$(<"$T/a.end") b_start=$(<"$T/b.start")
((b_start >= a_end)) || fail "two CMDs at once: the second started $((a_end - b_start)) ms before the first ended"
(($(<"$T/b.token") > $(<"$T/a.token"))) || fail "tokens: $(<"$T/a.token") then $(<"$T/b.token")"
echo "the second CMD started $((b_start - a_end)) ms after the first ended" >&2
