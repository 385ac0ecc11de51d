#!/usr/bin/env bash
# backends: sqlite
# etcd keeps leases across a change of leader (src/backend/etcd/README.md):
# on a 3-member cluster of the test's own, kill -9 of the leader while a
# lease is held. The holder's keep-alives get through to the new leader,
# so its CMD runs to its end (exit 0, never stopped); a second simba that
# waits meanwhile starts its CMD only after the first one ended: never two
# CMDs at once, and the second's fencing token is larger.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs etcd etcdctl jq
source "$(dirname -- "${BASH_SOURCE[0]}")/etcd_server.sh"
etcd_cluster_start "$T/etcd" || fail "cannot start an etcd cluster: $(tail -n 5 "$T"/etcd/m0.log)"
# The leader, by one member's view of the cluster; simba is pointed at it
# first, so that its kill also makes simba go to another member.
status() { ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:${ETCD_CLIENT_PORTS[$1]}" endpoint status -w json; }
leader_id=$(status 0 | jq -r '.[0].Status.leader')
leader=''
for i in 0 1 2; do
  [[ $(status "$i" | jq -r '.[0].Status.header.member_id') == "$leader_id" ]] && leader=$i
done
[[ -n $leader ]] || fail "no member is the leader ($leader_id)"
others=''
for i in 0 1 2; do ((i == leader)) || others+=",127.0.0.1:${ETCD_CLIENT_PORTS[i]}"; done
# 5 s leases and calls of 1 s: on a loaded machine the election and the
# calls that time out on the way to a new leader took more than 2 s leases
# left (the holder was stopped, exit 76, in a CI run).
export SIMBA_BACKEND="etcd://127.0.0.1:${ETCD_CLIENT_PORTS[leader]}$others/leader-kill?timeout=1s"

# CMD: the start and end (ms) and the token in FILE.start/.end
# shellcheck disable=SC2016 # for sh -c
cmd='date +%s%3N >"$0.start"; echo "$SIMBA_FENCING_TOKEN" >"$0.token"; sleep "$1"; date +%s%3N >"$0.end"'
"$SIMBA" run --mutex m --ttl 5s --transition 2s -- sh -c "$cmd" "$T/a" 4 2>"$T/a.err" &
a=$!
wait_file "$T/a.start" 10
"$SIMBA" run --mutex m --ttl 5s --transition 2s --timeout 30s -- sh -c "$cmd" "$T/b" 0 2>"$T/b.err" &
b=$!
sleep 0.5

kill -KILL "${ETCD_PIDS[leader]}"
echo "killed the leader, member $leader, at $(date +%s%3N)" >&2

wait "$a" || fail "the holder's run failed ($?): $(<"$T/a.err")"
wait "$b" || fail "the waiter's run failed ($?): $(<"$T/b.err")"
[[ -s $T/a.end ]] || fail "the holder's CMD did not run to its end: $(<"$T/a.err")"
! grep -q "lost\|stopping" "$T/a.err" || fail "the holder lost its lease: $(<"$T/a.err")"
a_end=$(<"$T/a.end") b_start=$(<"$T/b.start")
((b_start >= a_end)) || fail "two CMDs at once: the second started $((a_end - b_start)) ms before the first ended"
(($(<"$T/b.token") > $(<"$T/a.token"))) || fail "tokens: $(<"$T/a.token") then $(<"$T/b.token")"
echo "the second CMD started $((b_start - a_end)) ms after the first ended" >&2
