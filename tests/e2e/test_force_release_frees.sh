#!/usr/bin/env bash
# shellcheck disable=SC2016 # $0 in single quotes is for the sh -c CMDs
# backends: sqlite redis postgres pgbouncer
# After release --force (issue 31 §4), the owner stops its CMD and, once
# CMD is gone, ends the revoked lease: the next waiter runs within
# milliseconds of the owner's exit, not at the end of the revoked lease's
# transition (here up to 20 s later). Never before the owner's CMD is gone.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
shopt -s extglob

long=(--ttl 10s --transition 10s)
"$SIMBA" run --mutex m "${long[@]}" -- sh -c 'echo $$ >"$0"; exec sleep 60' "$T/holder.pid" &
holder=$!
wait_for 10 test -s "$T/holder.pid"
cmd=$(<"$T/holder.pid")
"$SIMBA" run --mutex m "${long[@]}" -- sh -c 'date +%s%3N >"$0"' "$T/next.start" 2>"$T/next.err" &
waiter=$!
needs jq
# It waits (through PgBouncer there is no queue to look at: its notice).
wait_for 10 grep -q "waiting for m" "$T/next.err"

"$SIMBA" release --force --mutex m -q || fail "release --force"
rc=0
wait "$holder" || rc=$?
ended=$(now_ms)
assert_eq 76 "$rc" "the forced owner's exit status"
pid_dead "$cmd" || fail "the forced owner's CMD still runs"
# The mutex is no longer revoked: free, or the waiter's already.
state=$(mutex_state m)
[[ $state != revoked ]] || fail "the mutex is still revoked after its owner exited"
if [[ ${SIMBA_E2E_BACKEND:-} == pgbouncer ]]; then
  # Through PgBouncer (listen=off) a waiter hears of nothing: it finds the
  # mutex at its next try, the revoked lease's end. A newcomer gets it now.
  "$SIMBA" run --mutex m --no-wait -- true || fail "a --no-wait run right after the forced owner exited"
fi
wait_for 30 test -s "$T/next.start"
wait "$waiter" || fail "the next run failed: $(<"$T/next.err")"
after=$(($(<"$T/next.start") - ended))
echo "the next CMD started $after ms after the forced owner exited (state then: $state)" >&2
if [[ ${SIMBA_E2E_BACKEND:-} != pgbouncer ]]; then
  # The old rule: at the revoked lease's transition_at, 10-20 s later.
  ((after < 5000)) || fail "the next CMD waited $after ms after the forced owner exited"
fi
# The next lease: handed over by the end of the revoked one (Redis) or
# acquired by the woken waiter.
events=$("$SIMBA" history --mutex m --json | jq -c '[.events[] | .event]')
[[ $events == '["acquired","forced","lost",'* ]] || fail "history: $events"
