#!/usr/bin/env bash
# shellcheck disable=SC2016 # $0 in single quotes is for the sh -c CMDs
# backends: sqlite redis postgres pgbouncer redis-cluster etcd mysql
# A release --force that lands after the owner's CMD has exited but before
# the owner's release reaches the backend: the release finds the lease
# revoked and changes nothing, so the owner ends the revoked lease itself
# (end_revoked, by its token), and the waiter runs at once, not at the end
# of the revoked lease's transition (20 s after its acquisition, past the
# waiter's --timeout). The gap is made deterministic: CMD's last act is a
# SIGSTOP to its simba (CMD then exits while simba is stopped), the force
# comes, then SIGCONT: simba reaps CMD first, then releases. Then the same
# with --min-hold, whose hold the force precedes.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs jq

long=(--ttl 10s --transition 10s)
"$SIMBA" run --mutex m "${long[@]}" -- sh -c '
  until [ -s "$0" ]; do sleep 0.02; done; kill -STOP "$(cat "$0")"' "$T/owner.pid" \
  2>"$T/owner.err" &
owner=$!
echo "$owner" >"$T/owner.pid"
stopped() { [[ $(awk '{print $3}' "/proc/$1/stat") == T ]]; }
wait_for 10 stopped "$owner"

"$SIMBA" release --force --mutex m -q || fail "release --force"
assert_eq revoked "$(mutex_state m)" "state after the force, the owner stopped"
# Through PgBouncer (listen=off) a waiter hears of nothing and sleeps until
# the revoked lease's end it saw: a newcomer takes the mutex below instead.
pgbouncer=false
[[ ${SIMBA_E2E_BACKEND:-} == pgbouncer ]] && pgbouncer=true
if ! $pgbouncer; then
  "$SIMBA" run --mutex m "${long[@]}" --timeout 15s -v -- sh -c 'date +%s%3N >"$0"' \
    "$T/next.start" 2>"$T/next.err" &
  waiter=$!
  wait_for 10 grep -q "waiting for m" "$T/next.err"
fi

kill -CONT "$owner"
# (bash's wait may report the stop first, 128+SIGSTOP: then wait again;
# CMD's own status is 0)
rc=$((128 + $(kill -l STOP)))
for _ in 1 2 3; do
  ((rc == 128 + $(kill -l STOP))) || break
  rc=0
  wait "$owner" || rc=$?
done
ended=$(now_ms)
assert_eq 0 "$rc" "the owner's exit status (its CMD's)"
if $pgbouncer; then
  assert_exit 0 "$SIMBA" run --mutex m --no-wait -- true
else
  wait "$waiter" || fail "the waiter failed: $(<"$T/next.err")"
  after=$(($(<"$T/next.start") - ended))
  echo "the waiter's CMD started $after ms after the owner exited" >&2
  ((after < 3000)) || fail "the waiter's CMD started $after ms after the owner exited"
fi

# The force is the lease's end in the history: nothing was stopped (no
# lost), and the revoked lease's end adds no event (Redis hands the mutex
# over to the waiter in its script: handed_over).
events=$("$SIMBA" history --mutex m --json | jq -c '[.events[] | .event]')
[[ $events =~ ^\[\"acquired\",\"forced\",\"(acquired|handed_over)\",\"released\"\]$ ]] ||
  fail "history: $events"
grep -q "revoked (release --force) before simba released it" "$T/owner.err" ||
  fail "the owner's stderr: $(<"$T/owner.err")"

# The same gap before --min-hold's hold: the hold finds the lease revoked;
# nothing runs under it, so it ends at once too (a newcomer takes it).
"$SIMBA" run --mutex h "${long[@]}" --min-hold 10m -- sh -c '
  until [ -s "$0" ]; do sleep 0.02; done; kill -STOP "$(cat "$0")"' "$T/holder.pid" \
  2>"$T/holder.err" &
holder=$!
echo "$holder" >"$T/holder.pid"
wait_for 10 stopped "$holder"
"$SIMBA" release --force --mutex h -q || fail "release --force of h"
assert_eq revoked "$(mutex_state h)" "state of h after the force, its owner stopped"
kill -CONT "$holder"
rc=$((128 + $(kill -l STOP)))
for _ in 1 2 3; do
  ((rc == 128 + $(kill -l STOP))) || break
  rc=0
  wait "$holder" || rc=$?
done
assert_eq 0 "$rc" "the --min-hold owner's exit status (its CMD's)"
assert_exit 0 "$SIMBA" run --mutex h --no-wait -- true
