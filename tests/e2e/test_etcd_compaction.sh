#!/usr/bin/env bash
# backends: sqlite
# A compaction while a waiter watches (src/backend/etcd/wakeups.cpp): on a
# member of the test's own, a waiter watches its predecessor's key from
# revision R; the test writes past R and compacts the history up to the
# newest revision (physically) while the holder's CMD runs. When the holder
# releases, the waiter must take the mutex at once (the watch still
# delivers the deletion, or a "compacted" answer makes it look again), not
# at a timer seconds later; never two CMDs at once.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs etcd etcdctl
source "$(dirname -- "${BASH_SOURCE[0]}")/etcd_server.sh"
etcd_single_start "$T/etcd" || fail "cannot start an etcd member: $(tail -n 5 "$T/etcd/s.log")"
ctl() { timeout -k 2 5 env ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:${ETCD_CLIENT_PORTS[0]}" "$@"; }
export SIMBA_BACKEND="$ETCD_URI/compaction?timeout=1s"

# CMD: its start and end (ms) and the token in FILE.start/.end/.token
# shellcheck disable=SC2016 # for sh -c
cmd='date +%s%3N >"$0.start"; echo "$SIMBA_FENCING_TOKEN" >"$0.token"; sleep "$1"; date +%s%3N >"$0.end"'
# A 20 s lease: a waiter that missed the release would wait for the
# holder's key to go (its next look at the timers, seconds later).
timeout -k 5 30 "$SIMBA" run --mutex m --ttl 20s -- sh -c "$cmd" "$T/a" 3 2>"$T/a.err" &
a=$!
wait_file "$T/a.start" 10
timeout -k 5 30 "$SIMBA" run --mutex m --ttl 20s --timeout 25s -- sh -c "$cmd" "$T/b" 0 2>"$T/b.err" &
b=$!
# The waiter has queued (its key is there) and set its watch up.
for _ in {1..50}; do
  (($(ctl get --prefix compaction --keys-only | grep -c .) >= 2)) && break
  sleep 0.1
done
(($(ctl get --prefix compaction --keys-only | grep -c .) >= 2)) || fail "the waiter never queued: $(<"$T/b.err")"
sleep 0.5

# Writes past the waiter's start revision, then the history compacted up
# to the newest revision: the watch's revision R is gone.
for i in {1..5}; do ctl put "other/k$i" "v$i" >/dev/null || fail "put failed"; done
rev=$(ctl endpoint status -w json | grep -o '"revision":[0-9]*' | head -n 1 | cut -d: -f2)
[[ -n $rev ]] || fail "no revision from etcdctl endpoint status"
ctl compact --physical "$rev" >&2 || fail "the compaction failed"
echo "compacted at revision $rev at $(date +%s%3N)" >&2

wait "$a" || fail "the holder's run failed ($?): $(<"$T/a.err")"
wait "$b" || fail "the waiter's run failed ($?): $(<"$T/b.err")"
a_end=$(<"$T/a.end") b_start=$(<"$T/b.start")
((b_start >= a_end)) || fail "two CMDs at once: the second started $((a_end - b_start)) ms before the first ended"
(($(<"$T/b.token") > $(<"$T/a.token"))) || fail "tokens: $(<"$T/a.token") then $(<"$T/b.token")"
# At once: within 1.5 s of the holder's end (its release, the watch event,
# the waiter's acquire; a loaded machine), not at a timer later.
((b_start - a_end <= 1500)) || fail "the waiter took the mutex $((b_start - a_end)) ms after the release (a missed wake-up)"
echo "the second CMD started $((b_start - a_end)) ms after the first ended" >&2
