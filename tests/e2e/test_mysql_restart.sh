#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# MariaDB killed (kill -9) under a holder, and restarted at once after
# losing its last writes (the lease row deleted, as a server restarted with
# innodb_flush_log_at_trx_commit=0, or a promoted replica, may have lost
# it): the next contender gets no lease while the old holder's CMD may
# still run (the server-run quarantine), so no two CMDs overlap; `status`
# shows the quarantine; the next token is above every earlier one.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/mysql_common.sh"
start_own_mysql
export SIMBA_BACKEND="$MY_URI?timeout=500ms"

"$SIMBA" run --mutex lost --ttl 1s --transition 1s -- \
  sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0"' "$T/first" || fail "no first run"
"$SIMBA" run --mutex lost --ttl 3s --transition 1s -- \
  sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$T/child.pid" &
holder=$!
wait_for 10 test -s "$T/child.pid"
child=$(<"$T/child.pid")
my_server_sql "DELETE FROM simba.simba_leases WHERE mutex = 'lost'" ||
  fail "cannot delete the lease row"
kill -KILL "$MY_PID"
wait "$MY_PID" 2>/dev/null || true
my_server_spawn
my_server_wait 30 || fail "cannot restart MariaDB"
t0=$(now_ms)
# The contender's CMD says whether the old holder's CMD still ran. Its
# first acquire finds the new server run and starts the quarantine, which
# status then shows.
"$SIMBA" run --mutex lost --ttl 3s --transition 1s --timeout 20s -- \
  sh -c 'if kill -0 "$1" 2>/dev/null; then echo overlap; else echo alone; fi >"$0"
         echo "$SIMBA_FENCING_TOKEN" >"$2"' "$T/verdict" "$child" "$T/next" 2>"$T/c.err" &
contender=$!
wait_for 10 sh -c '[ "$("$0" status --mutex lost --json | jq -r ".mutexes[0].state")" = quarantine ]' "$SIMBA"
wait "$contender" || fail "the contender did not get the mutex after the restart"
dt=$(($(now_ms) - t0))
assert_eq alone "$(<"$T/verdict")" "the old holder's CMD when the next one started"
wait_for 4 pid_dead "$child"
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of the holder whose lease was lost"
echo "the next holder started ${dt} ms after the restart (quarantine: 3 s + 1 s + 1 s)" >&2
((dt >= 4500)) || fail "the next holder started ${dt} ms after the restart: before the quarantine ended"
(($(<"$T/next") > $(<"$T/first"))) || fail "the token after the restart is not larger"
# Its notice says why it waits, and names no Redis remedy (doctor --init).
grep -q "in quarantine until about .*it may have lost a running lease" "$T/c.err" ||
  fail "the quarantine notice: $(<"$T/c.err")"
! grep -q "Redis" "$T/c.err" || fail "a MySQL quarantine's notice names Redis: $(<"$T/c.err")"
