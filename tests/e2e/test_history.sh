#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres redis-cluster mysql etcd
# simba history: a run (acquired, released with CMD's exit code), a waiter
# that got it after a release (acquired on SQLite and PostgreSQL, handed_over on Redis,
# with how long it waited), an expiry seen by the next acquisition, a
# forced release (by whom); --since; the bound (SIMBA_HISTORY_LIMIT) holds
# after 3x that many events and after it is lowered; SIMBA_HISTORY_LIMIT=0
# writes none.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

needs jq sqlite3
host=$(hostname)
events() { "$SIMBA" history --mutex "$1" --json | jq -c "[.events[] | $2]"; }

# A run whose CMD exits 3, and a waiter queued behind it.
"$SIMBA" run --mutex h --contender-id one -- sh -c 'touch "$0"; sleep 1; exit 3' "$T/one" &
one=$!
wait_file "$T/one" 10
"$SIMBA" run --mutex h --contender-id two -q -- true &
two=$!
wait "$one" && fail "the first run's exit status was 0" || true
wait "$two" || fail "the waiter failed"
second=handed_over
[[ ${SIMBA_BACKEND} == redis* ]] || second=acquired # SQLite, PostgreSQL: the waiter acquires itself
assert_eq "[\"acquired one $host $one sh\",\"released one 3\",\"$second two $host $two true\",\"released two 0\"]" \
  "$(events h '"\(.event) \(.label)" + (if .event == "released" then " \(.exit_code)" else " \(.host) \(.pid) \(.command)" end)')" \
  "history of a run and a waiter"
waited=$(events h 'select(.label == "two" and .event != "released") | .waited_ms' | jq '.[0]')
((waited >= 500 && waited < 5000)) || fail "the waiter waited ${waited}ms (about 1s expected)"
held=$(events h 'select(.label == "one" and .event == "released") | .held_ms' | jq '.[0]')
((held >= 900 && held < 5000)) || fail "one held it ${held}ms (about 1s expected)"
tokens=$(events h '.fencing_token' | jq -r 'map(tostring) | join(" ")')
read -r t1 t2 t3 t4 <<<"$tokens"
[[ $t1 == "$t2" && $t3 == "$t4" && $t1 != "$t3" ]] || fail "tokens of the events: $tokens"
assert_exit 0 "$SIMBA" history --mutex h
grep -qE "^[0-9-]+T[0-9:]+Z h released one, token $t1, exit 3, held " "$T/out" ||
  fail "history's text: $(cat -- "$T/out")"

# An expiry, written by the acquisition that finds the lease run out.
"$SIMBA" run --mutex e --contender-id gone --ttl 1s --transition 1s -- \
  sh -c 'touch "$0"; exec sleep 60' "$T/gone" &
gone=$!
wait_file "$T/gone" 10
kill -STOP "$gone"
sleep 2.5
"$SIMBA" run --mutex e --contender-id next -q -- true
kill -KILL "$gone"
wait "$gone" || true
assert_eq '["acquired gone","expired gone","acquired next","released next"]' \
  "$(events e '"\(.event) \(.label)"')" "history of an expiry"
held=$(events e 'select(.event == "expired") | .held_ms' | jq '.[0]')
# etcd: until the next acquisition found its key gone, which etcd keeps a
# second longer than the lease, to its next check for ended leases (twice
# a second): docs/backends/etcd.md.
most=2500
[[ ${SIMBA_E2E_BACKEND:-} == etcd ]] && most=4500
((held >= 1900 && held <= most)) || fail "the expired lease's held_ms: $held (ttl + transition: 2s)"

# A forced release: by whom.
"$SIMBA" run --mutex f --contender-id victim -- sh -c 'touch "$0"; exec sleep 60' "$T/victim" &
victim=$!
wait_file "$T/victim" 10
"$SIMBA" release --force --mutex f -q &
forcer=$!
wait "$forcer" || fail "release --force failed"
wait "$victim" || true
assert_eq "[\"forced victim $host $forcer release --force\"]" \
  "$(events f 'select(.event == "forced") | "\(.event) \(.label) \(.host) \(.pid) \(.via)"')" \
  "the forced release and who forced it"

# SQLite: each process turns its clock into wall time on its own, so an
# event is never written before its mutex's last one (else a release and
# the next acquisition could swap places when read in time order). The
# last event moved 1 h ahead, as a process whose wall time ran ahead would
# have written it: the next events come after it.
if [[ ${SIMBA_E2E_BACKEND:-sqlite} == sqlite ]]; then
  "$SIMBA" run --mutex t -q -- true
  sqlite3 "$T/simba.db" "UPDATE simba_events SET at = at + 3600000 WHERE mutex = 't' AND \
    seq = (SELECT MAX(seq) FROM simba_events WHERE mutex = 't')"
  "$SIMBA" run --mutex t --contender-id later -q -- true
  assert_exit 0 "$SIMBA" history --mutex t --json
  assert_eq '["acquired","released","acquired later","released later"]' \
    "$(jq -c '[.events[] | (.event + (if .label == "later" then " later" else "" end))]' "$T/out")" \
    "a later event read after an earlier one whose time ran ahead"
fi

# --since: only the recent events.
assert_exit 0 "$SIMBA" history --mutex h --since 1ms --json
assert_eq 0 "$(jq '.events | length' "$T/out")" "history --since 1ms of an old mutex"
assert_exit 0 "$SIMBA" history --since 1h --json
assert_eq '[]' "$(jq -c '["e", "f", "h"] - [.events[].mutex]' "$T/out")" "every mutex's history"

# The bound: 3 x N events, the last N kept.
export SIMBA_HISTORY_LIMIT=4
for i in 1 2 3 4 5 6; do "$SIMBA" run --mutex b --contender-id "r$i" -q -- true; done
assert_eq '["acquired r5","released r5","acquired r6","released r6"]' \
  "$(events b '"\(.event) \(.label)"')" "the last 4 of 12 events"
SIMBA_HISTORY_LIMIT=0 "$SIMBA" run --mutex b --contender-id r7 -q -- true
assert_eq '["acquired r5","released r5","acquired r6","released r6"]' \
  "$(events b '"\(.event) \(.label)"')" "SIMBA_HISTORY_LIMIT=0 writes nothing"
# A lower limit: the events past it go too (SQLite: within that many
# events of the change; here at once, at its ring's place 0).
SIMBA_HISTORY_LIMIT=2 "$SIMBA" run --mutex b --contender-id r8 -q -- true
assert_eq '["acquired r8","released r8"]' "$(events b '"\(.event) \(.label)"')" \
  "the last 2 events after the limit went from 4 to 2"
SIMBA_HISTORY_LIMIT=-1 assert_exit 64 "$SIMBA" run --mutex b -- true
