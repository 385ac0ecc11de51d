#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres redis-cluster etcd mysql
# A waiting run's notice says its place in the queue ("3rd of 3 in line"),
# the JSON log carries it (queue_position, queue_length), and the place
# moves up as the queue drains.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

needs jq
export SIMBA_WAIT_NOTICE_EVERY=300ms
waiters() { "$SIMBA" status --mutex q --json | jq '.mutexes[0].waiters | length'; }
queued() { [[ $(waiters) == "$1" ]]; }
short=(--ttl 1s --transition 2s)
# Each holder holds until the test has seen what it must see while it
# holds (a file $T/NAME.go), not for a fixed time: under load 3 s holds ended
# before the waiters queued (e2e-postgres). --transition 2s: a renewal,
# sent when the 1 s ttl ends, has about 0.9 s to come back before CMD is
# stopped, not 0.4 s (a holder lost its lease under load).
hold='touch "$0"; until [ -e "$0.go" ]; do sleep 0.05; done'

"$SIMBA" run --mutex q "${short[@]}" -- sh -c "$hold" "$T/h" &
holder=$!
wait_file "$T/h" 10
"$SIMBA" run --mutex q "${short[@]}" --contender-id w1 -- sh -c "$hold" "$T/w1" 2>"$T/w1.err" &
w1=$!
wait_for 10 queued 1
"$SIMBA" run --mutex q "${short[@]}" --contender-id w2 -- sh -c "$hold" "$T/w2" 2>"$T/w2.err" &
w2=$!
wait_for 10 queued 2
"$SIMBA" run --mutex q "${short[@]}" --contender-id w3 --log-format json -- true 2>"$T/w3.log" &
w3=$!
wait_for 10 queued 3
wait_for 10 grep -q '^simba: waiting for q, 2nd of 2 in line: held by ' "$T/w2.err"
grep -q '^simba: waiting for q: held by ' "$T/w1.err" || fail "w1's notice (1st of 1: no place): $(cat -- "$T/w1.err")"
# The first in line knows itself among the others (not "4th of 4").
wait_for 10 grep -q "^simba: still waiting for q after .*, 1st of 3 in line: held by " "$T/w1.err"
touch "$T/h.go"
# w3's place moves up while w1 holds (w2 holds after it, if need be).
moved_up() { jq -s 'any(.[]; .queue_position and .queue_position < 3)' "$T/w3.log" | grep -qx true; }
wait_for 15 moved_up
touch "$T/w1.go" "$T/w2.go"
wait "$holder" "$w1" "$w2" "$w3" || fail "a run failed: $(cat -- "$T/w3.log")"

first=$(jq -r 'select(.event == "waiting") | .message' "$T/w3.log")
[[ $first == "waiting for q, 3rd of 3 in line: held by "* ]] || fail "w3's first notice: $first"
places=$(jq -r 'select(.queue_position) | "\(.queue_position)/\(.queue_length)"' "$T/w3.log" | tr '\n' ' ')
[[ $places == "3/3 "* ]] || fail "w3's places: $places"
# Only ever moving up, and up it moved.
jq -s '[.[] | select(.queue_position) | .queue_position] | . == (sort | reverse) and min < 3' \
  "$T/w3.log" | grep -qx true || fail "w3's place did not move up in order: $places; its log: $(cat -- "$T/w3.log")"
