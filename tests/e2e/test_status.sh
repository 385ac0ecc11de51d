#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres pgbouncer etcd mysql
# simba status: --json fields of a held mutex, -q exit codes, unknown
# mutexes are free, the table lists the mutexes not free (--all: every one),
# and a lease past its TTL but
# within its transition shows "transition".
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }
needs jq
is_posint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

# A held mutex.
"$SIMBA" run --mutex m --contender-id holder@e2e --ttl 5s -- \
  sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 60' "$T/token" &
holder=$!
wait_for 10 test -s "$T/token"

assert_exit 0 simba_bounded status --mutex m --json
json=$(<"$T/out")
jq -e '(.backend_now | type) == "number" and .backend_now > 0' <<<"$json" >/dev/null ||
  fail "backend_now missing or not a number: $json"
assert_eq held "$(mutex_state m)" "state of a held mutex"
assert_eq holder@e2e "$(mutex_field m label)" "label"
owner=$(mutex_field m owner)
[[ $owner =~ ^holder@e2e#[0-9a-f]{16}$ ]] || fail "owner is not the label plus an instance id: [$owner]"
token=$(mutex_field m fencing_token)
is_posint "$token" || fail "fencing_token is not a positive integer: [$token]"
assert_eq "$(<"$T/token")" "$token" "fencing_token in status vs SIMBA_FENCING_TOKEN of CMD"
ttl_left=$(mutex_field m ttl_remaining_ms)
((ttl_left > 0 && ttl_left <= 5000)) || fail "ttl_remaining_ms=$ttl_left, expected in (0, 5000]"
trans_left=$(mutex_field m transition_remaining_ms)
((trans_left > ttl_left && trans_left <= 7000)) ||
  fail "transition_remaining_ms=$trans_left, expected in ($ttl_left, 7000]"
# One reading of the lease: the holder's guards move ttl_at and
# transition_at between two `status` calls.
assert_exit 0 simba_bounded status --mutex m --json
read -r acquired ttl_at transition_at < <(jq -r '.mutexes[] | select(.mutex == "m") |
  "\(.acquired_at) \(.ttl_at) \(.transition_at)"' "$T/out")
((acquired > 0 && acquired < ttl_at && ttl_at < transition_at)) ||
  fail "expected 0 < acquired_at < ttl_at < transition_at, got $acquired, $ttl_at, $transition_at"
assert_eq 2000 "$((transition_at - ttl_at))" "transition_at - ttl_at (default transition 2s)"

assert_exit 0 simba_bounded status --mutex m -q
assert_exit 0 simba_bounded status --mutex m
grep -q holder@e2e "$T/out" || fail "the table does not show the owner: $(cat -- "$T/out")"

kill -TERM "$holder"
wait_for 5 pid_dead "$holder"
wait "$holder" || true
assert_exit 1 simba_bounded status --mutex m -q
assert_eq free "$(mutex_state m)" "state after the holder exited"

# A mutex nobody ever used is free.
assert_exit 1 simba_bounded status --mutex never-used -q
assert_exit 0 simba_bounded status --mutex never-used --json
assert_eq free "$(mutex_state never-used)" "state of an unknown mutex"

# Without --mutex: every mutex, a header line and one line each.
export SIMBA_BACKEND="sqlite:$T/list.db"
for name in alpha beta/one gamma@x; do
  assert_exit 0 simba_bounded run --mutex "$name" -- true
done
"$SIMBA" run --mutex delta -- sh -c 'touch "$0"; exec sleep 60' "$T/delta" &
delta=$!
wait_file "$T/delta" 10
# --all: every mutex, a header line and one row each (the lines under a
# row are indented).
assert_exit 0 simba_bounded status --all
mapfile -t lines < <(grep -v '^ ' "$T/out")
((${#lines[@]} == 5)) || fail "expected a header and 4 rows, got: $(cat -- "$T/out")"
for name in alpha beta/one gamma@x delta; do
  grep -q "^${name}[[:space:]]" "$T/out" || fail "the table has no line for $name: $(cat -- "$T/out")"
done
[[ ${lines[0],,} == *mutex* ]] || fail "no header line: ${lines[0]}"
grep -E "^delta[[:space:]]+held[[:space:]]" "$T/out" >/dev/null ||
  fail "the table does not show delta as held: $(cat -- "$T/out")"
# By default only the mutexes not free.
assert_exit 0 simba_bounded status
mapfile -t lines < <(grep -v '^ ' "$T/out")
((${#lines[@]} == 2)) || fail "expected a header and delta's row, got: $(cat -- "$T/out")"
grep -q "^delta[[:space:]]" "$T/out" || fail "status lacks the held delta: $(cat -- "$T/out")"
assert_exit 0 simba_bounded status -q # one is held
# SIMBA_MUTEX (set for every CMD under simba) does not narrow the listing.
SIMBA_MUTEX=alpha assert_exit 0 simba_bounded status --all
mapfile -t lines < <(grep -v '^ ' "$T/out")
((${#lines[@]} == 5)) || fail "with SIMBA_MUTEX set, expected all 4 mutexes, got: $(cat -- "$T/out")"
assert_exit 0 simba_bounded status --all --json
assert_eq "alpha beta/one delta gamma@x" \
  "$(jq -r '[.mutexes[].mutex] | sort | join(" ")' "$T/out")" "mutexes in status --all --json"
assert_exit 0 simba_bounded status --json
assert_eq "delta" "$(jq -r '[.mutexes[].mutex] | join(" ")' "$T/out")" "mutexes in status --json"
kill -TERM "$delta"
wait_for 5 pid_dead "$delta"
wait "$delta" || true
assert_exit 1 simba_bounded status -q # none is held

# Past the TTL but within the transition: "transition". The holder's simba
# is stopped, so it cannot renew (its watchdog kills CMD at the deadline).
"$SIMBA" run --mutex t --ttl 1s --transition 3s -- sh -c 'touch "$0"; exec sleep 60' "$T/t" &
stopped=$!
wait_file "$T/t" 10
assert_eq held "$(mutex_state t)" "state of t before the holder is stopped"
kill -STOP "$stopped"
is_transition() { [[ $(mutex_state t) == transition ]]; }
wait_for 2.5 is_transition
assert_eq 0 "$(mutex_field t ttl_remaining_ms)" "ttl_remaining_ms in the transition window"
left=$(mutex_field t transition_remaining_ms)
((left > 0 && left <= 3000)) || fail "transition_remaining_ms=$left in the transition window"
kill -CONT "$stopped"
kill -TERM "$stopped"
wait_for 5 pid_dead "$stopped"
wait "$stopped" || true
