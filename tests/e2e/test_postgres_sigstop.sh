#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# The server stopped (SIGSTOP of the postmaster and its processes) for
# longer than the lease: the holder's guards get no answer in time, its CMD
# is stopped before transition_at and simba exits 76; once the server goes
# on, the next holder's fencing token is larger.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
start_own_postgres
export SIMBA_BACKEND="$PG_URI?timeout=300ms"

"$SIMBA" run --mutex s --ttl 1s --transition 1s -- \
  sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$1"; echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' \
  "$T/child.pid" "$T/token" 2>"$T/holder.err" &
holder=$!
wait_for 10 test -s "$T/child.pid"
child=$(<"$T/child.pid")
server=("$PG_PID" $(pgrep -P "$PG_PID"))
kill -STOP "${server[@]}"
t0=$(now_ms)
wait_for 4 pid_dead "$child"
dt=$(($(now_ms) - t0))
kill -CONT "${server[@]}"
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of the holder whose server stopped"
((dt < 2000)) || fail "CMD stopped ${dt} ms after the server stopped: after its transition_at (2 s)"
echo "CMD stopped ${dt} ms after the server stopped" >&2
# Each guard gave up at its deadline (the URI's timeout), not when the
# server went on.
grep -q 'no answer from PostgreSQL at .* within 300ms' "$T/holder.err" ||
  fail "no guard timed out: $(cat -- "$T/holder.err")"
"$SIMBA" run --mutex s --ttl 1s --transition 1s --timeout 20s -- \
  sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0"' "$T/next"
(($(<"$T/next") > $(<"$T/token"))) || fail "the token went back: $(<"$T/token") then $(<"$T/next")"
