#!/usr/bin/env bash
# An uncontended `simba run -- true`, and one with `--slots 3`, costs the
# server two statements (the acquire and the release) besides the
# connection's own start-up: no look for the tables first (the statement
# itself fails when they are missing, docs/benchmarks.md). Counted as transactions of a database of the test's own
# (pg_stat_database: each statement is one), against a `psql -c 'SELECT 1'`
# (the start-up and one statement). A count is read once the sessions of
# that database are gone (a backend writes its counts before it leaves
# pg_stat_activity); autovacuum may add to one, never take away: the
# smallest of three tries is kept.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
use_test_postgres
needs psql
admin=${SIMBA_TEST_POSTGRES_URI%%\?*}
db="simba_rt_$$_$RANDOM"
sql() { psql -X -q -v ON_ERROR_STOP=1 -At "$admin" -c "$1"; }
sql "CREATE DATABASE $db" || fail "cannot create a database"
drop_db() {
  local rc=$?
  sql "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
  return "$rc"
}
trap 'drop_db; _e2e_cleanup' EXIT
uri="${admin%/*}/$db"

sessions() { sql "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db'"; }
no_sessions() { [[ $(sessions) == 0 ]]; }
transactions() {
  sql "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$db'"
}

# The transactions CMD... makes in $db: the fewest of three tries.
cost() {
  local best='' try before after
  for try in 1 2 3; do
    wait_for 10 no_sessions
    before=$(transactions)
    "$@" >/dev/null 2>&1 || fail "$* failed"
    wait_for 10 no_sessions
    after=$(transactions)
    [[ -z $best ]] || ((after - before < best)) && best=$((after - before))
  done
  echo "$best"
}

# The first use makes the tables (more statements): not counted.
assert_exit 0 "$SIMBA" run --backend "$uri" --mutex m -- true
base=$(cost psql -X -q -At "$uri" -c 'SELECT 1')
run=$(cost "$SIMBA" run --backend "$uri" --mutex m -- true)
assert_eq "$((base + 1))" "$run" \
  "transactions of an uncontended run (start-up + 2; a bare SELECT 1 costs $base)"
# --slots 3 the same: one statement takes the slot (and moves the marker),
# one releases it.
slots=$(cost "$SIMBA" run --backend "$uri" --mutex s --slots 3 -- true)
assert_eq "$((base + 1))" "$slots" \
  "transactions of an uncontended --slots 3 run (start-up + 2; a bare SELECT 1 costs $base)"
