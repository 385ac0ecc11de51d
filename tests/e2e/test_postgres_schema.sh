#!/usr/bin/env bash
# ?schema= names a schema that does not exist yet: status says there is
# nothing (69) and creates nothing; the first run creates the schema and
# the tables (PostgreSQL says "relation does not exist" for a table in a
# missing schema: the schema was never made, and every run exited 69).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
use_test_postgres
needs psql
admin=${SIMBA_TEST_POSTGRES_URI%%\?*}
schema="e2e_schema_$$_$RANDOM"
sql() { psql -X -q -v ON_ERROR_STOP=1 -At "$admin" -c "$1"; }
drop_schema() {
  local rc=$?
  sql "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
  return "$rc"
}
trap 'drop_schema; _e2e_cleanup' EXIT
export SIMBA_BACKEND="$admin?schema=$schema"

assert_exit 69 "$SIMBA" status
grep -q "no simba tables" "$T/err" || fail "status did not say why: $(cat -- "$T/err")"
assert_eq 0 "$(sql "SELECT count(*) FROM pg_namespace WHERE nspname = '$schema'")" \
  "schemas made by status"
assert_exit 0 "$SIMBA" run --mutex m -- echo ran
assert_eq ran "$(cat -- "$T/out")" "CMD's output"
assert_eq 1 "$(sql "SELECT count(*) FROM pg_tables WHERE schemaname = '$schema'
                      AND tablename = 'simba_leases'")" "the leases table in the new schema"
assert_exit 0 "$SIMBA" status --mutex m --json
