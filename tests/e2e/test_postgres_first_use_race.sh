#!/usr/bin/env bash
# The schema script of a first use (or of tables to bring up to date)
# beside others: no deadlock, no exit 69.
#  1. Tables of a simba without history_seq, and a session that has read
#     them and then alters them (as a second simba's script would): simba's
#     script alters before it reads, so the two do not deadlock
#     (pg_stat_database.deadlocks of a database of the test's own stays 0).
#     A script that read a table before altering it deadlocked there; after
#     three such losses (16 simba at once on new tables: scripts/bench's
#     hand-over hit it) simba exited 69.
#  2. 16 simba at once on new tables: all exit 0 (a CREATE that lost its
#     race, "type ... already exists", is tried again).
#  3. A deadlock's victim is sent again (below).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
use_test_postgres
needs psql
admin=${SIMBA_TEST_POSTGRES_URI%%\?*}
db="simba_race_$$_$RANDOM"
sql() { psql -X -q -v ON_ERROR_STOP=1 -At "$admin" -c "$1"; }
sql "CREATE DATABASE $db" || fail "cannot create a database"
drop_db() {
  local rc=$?
  sql "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
  return "$rc"
}
trap 'drop_db; _e2e_cleanup' EXIT
# 5 s, not the default 2 s, for each statement: 16 schema scripts at once
# wait for each other's locks, on a machine that CI loads.
pg_uri="${admin%/*}/$db" # psql's
uri="$pg_uri?timeout=5s"
clients_gone() {
  [[ $(sql "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db'
              AND backend_type = 'client backend'") == 0 ]]
}

# 1.
assert_exit 0 "$SIMBA" run --backend "$uri" --mutex m -- true
psql -X -q -At "$pg_uri" -c 'ALTER TABLE simba_leases DROP COLUMN history_seq' ||
  fail "cannot drop a column"
{
  echo 'BEGIN;'
  echo 'SELECT count(*) FROM simba_leases;'
  echo 'SELECT pg_sleep(1.5);' # simba's script waits for this session
  echo 'ALTER TABLE simba_leases ADD COLUMN IF NOT EXISTS history_seq bigint;'
  echo 'COMMIT;'
} | psql -X -q -At "$pg_uri" >"$T/psql.out" 2>&1 &
other=$!
sleep 0.5
assert_exit 0 "$SIMBA" run --backend "$uri" --mutex m --timeout 30s -- true
wait "$other" || true
wait_for 10 clients_gone # a backend writes its counts before it leaves
assert_eq 0 "$(sql "SELECT deadlocks FROM pg_stat_database WHERE datname = '$db'")" \
  "deadlocks with the other session ($(cat -- "$T/psql.out"))"

# 2.
pids=()
for i in {1..16}; do
  # all at once: each waits for the gate (a file), then execs simba
  sh -c 'i=0; while [ ! -e "$0" ] && [ $((i += 1)) -lt 1000 ]; do sleep 0.01; done; exec "$@"' \
    "$T/gate" "$SIMBA" run --backend "$uri&prefix=many_" --mutex m --timeout 60s \
    -- true 2>"$T/err.$i" &
  pids+=($!)
done
sleep 0.3
: >"$T/gate"
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || fail "simba $((i + 1)) of 16 exits $?: $(cat -- "$T/err.$((i + 1))")"
done

# 3. A statement the server chose as a deadlock's victim (40P01: rolled
#    back, nothing applied) is sent again within the call's budget, not
#    taken for an unavailable server (exit 69). The other session holds
#    the lease row and then asks for a lock on the history table, which
#    simba's acquire (waiting for the row) holds: simba's check, the
#    earlier one (its deadlock_timeout 3 s, the other's 30 s), finds the
#    cycle.
assert_exit 0 "$SIMBA" run --backend "$uri" --mutex d -- true
before=$(sql "SELECT deadlocks FROM pg_stat_database WHERE datname = '$db'")
# The other session reads its lines from a FIFO: the row first, the LOCK
# only once simba's acquire waits for the row (no sleep to guess with on a
# busy machine).
mkfifo "$T/other.in"
psql -X -q -At "$pg_uri" <"$T/other.in" >"$T/psql3.out" 2>&1 &
other=$!
exec {to_other}>"$T/other.in"
printf '%s\n' "SET deadlock_timeout = '30s';" 'BEGIN;' \
  "UPDATE simba_leases SET owner = owner WHERE mutex = 'd';" "SELECT 'row locked';" >&"$to_other"
wait_for 20 grep -q 'row locked' "$T/psql3.out"
"$SIMBA" run --backend "$uri&options=-c%20deadlock_timeout%3D3000ms" --mutex d -- true 2>"$T/err" &
simba=$!
simba_waits() {
  [[ $(sql "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db'
              AND wait_event_type = 'Lock' AND application_name NOT LIKE 'psql%'") -ge 1 ]]
}
wait_for 20 simba_waits
printf '%s\n' 'LOCK TABLE simba_history IN SHARE MODE;' 'SELECT pg_sleep(0.5);' 'COMMIT;' >&"$to_other"
exec {to_other}>&-
rc=0
wait "$simba" || rc=$?
assert_eq 0 "$rc" "simba's run whose acquire lost a deadlock ($(cat -- "$T/err"))"
wait "$other" || true
# Sent again at once: no warning of a failing backend, no back-off.
[[ ! -s $T/err ]] || fail "simba's acquire after its deadlock: $(cat -- "$T/err")" 
wait_for 10 clients_gone
assert_eq $((before + 1)) "$(sql "SELECT deadlocks FROM pg_stat_database WHERE datname = '$db'")" \
  "deadlocks: the one made for simba's acquire to lose ($(cat -- "$T/psql3.out"))"
