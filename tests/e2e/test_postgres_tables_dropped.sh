#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# simba's tables dropped under a holder (an admin who re-initialises the
# schema): the holder's next guard finds no lease of its own, so its CMD is
# stopped and it exits 76 within its ttl. What remains (README, "Safety
# model"): a newcomer that comes in between makes the tables anew and may
# run beside the holder until that guard; the test reports it, it does not
# promise it.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
use_test_postgres
needs psql
admin=${SIMBA_TEST_POSTGRES_URI%%\?*}
prefix=${SIMBA_BACKEND##*prefix=}

"$SIMBA" run --mutex d --ttl 2s --transition 1s -- \
  sh -c 'echo $$ >"$0"; exec sleep 60' "$T/a.pid" &
holder=$!
wait_for 10 test -s "$T/a.pid"
# The tables of this test's prefix ('_' is a LIKE wildcard: the prefix is
# unique enough that nothing else matches).
tables=$(psql -X -At "$admin" -c "SELECT string_agg(format('%I.%I', schemaname, tablename), ', ')
                                   FROM pg_tables WHERE tablename LIKE '${prefix}%'") ||
  fail "psql failed"
[[ -n $tables ]] || fail "no table of prefix $prefix: the test proves nothing"
t0=$(now_ms)
psql -X -q "$admin" -c "DROP TABLE $tables" || fail "DROP TABLE $tables failed"

rc=0
"$SIMBA" run --mutex d --no-wait -- true || rc=$?
echo "info: a newcomer right after the DROP exited $rc (0: it ran beside the holder, as README says)" >&2

wait_for 5 pid_dead "$(<"$T/a.pid")"
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of the holder whose tables were dropped"
dt=$(($(now_ms) - t0))
echo "holder stopped ${dt} ms after the DROP" >&2
((dt < 3500)) || fail "the holder took ${dt} ms to notice (ttl 2 s)"
