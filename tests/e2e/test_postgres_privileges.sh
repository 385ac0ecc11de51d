#!/usr/bin/env bash
# A role that may not create simba's tables: exit 69 and one line naming
# the SQL an administrator runs; once it has run (and the role may use the
# tables), simba works as that role. `status` creates nothing: on a
# database without the tables it says so (69).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
use_test_postgres
needs psql
admin=${SIMBA_TEST_POSTGRES_URI%%\?*}
role="simba_e2e_$$_$RANDOM"
prefix="priv_$$_${RANDOM}_"
sql() { psql -X -q -v ON_ERROR_STOP=1 -At "$admin" -c "$1"; }
sql "CREATE ROLE $role LOGIN PASSWORD 'role-pw'" || fail "cannot create a role"
drop_role() {
  local rc=$?
  sql "DROP TABLE IF EXISTS \"${prefix}leases\", \"${prefix}server\", \"${prefix}waiters\",
         \"${prefix}history\";
       DROP OWNED BY $role;
       DROP ROLE $role" >/dev/null 2>&1
  return "$rc"
}
trap 'drop_role; _e2e_cleanup' EXIT
uri="postgres://$role:role-pw@${admin#*@}?prefix=$prefix"

# PostgreSQL 15: no role but the owner may create in schema public.
assert_exit 69 "$SIMBA" status --backend "$uri"
grep -q "no simba tables" "$T/err" || fail "status did not say why: $(cat -- "$T/err")"
assert_exit 69 "$SIMBA" run --backend "$uri" --mutex p -- true
[[ $(wc -l <"$T/err") -eq 1 ]] || fail "not one line: $(cat -- "$T/err")"
grep -q "may not create" "$T/err" || fail "no reason given: $(cat -- "$T/err")"
grep -Fq "may not create simba's tables in schema \"public\" at postgres://" "$T/err" ||
  fail "no reason: $(cat -- "$T/err")"
grep -Fq "(missing: tables \"${prefix}leases\", \"${prefix}server\", \"${prefix}waiters\", \"${prefix}history\"); " "$T/err" ||
  fail "the missing tables are not named: $(cat -- "$T/err")"
grep -Fq "GRANT USAGE ON SCHEMA \"public\" TO \"$role\";" "$T/err" ||
  fail "the grants of the role are not in the SQL: $(cat -- "$T/err")"
ddl=$(sed -n 's/.*have an administrator run (man simba, POSTGRESQL): //p' "$T/err")
[[ $ddl == *"CREATE TABLE"*"${prefix}leases"* ]] || fail "the SQL is not named: $(cat -- "$T/err")"
# The SQL grants what the role needs too: nothing else is run.
sql "$ddl" || fail "the SQL in the message does not run: $ddl"
assert_exit 0 "$SIMBA" run --backend "$uri" --mutex p -- sh -c 'echo "$SIMBA_FENCING_TOKEN"'
(($(<"$T/out") > 0)) || fail "no fencing token: $(cat -- "$T/out")"
# --slots: the same grants (its statements read, write and delete no more).
assert_exit 0 "$SIMBA" run --backend "$uri" --mutex s --slots 2 -- sh -c 'echo "$SIMBA_SLOT"'
assert_eq 0 "$(<"$T/out")" "the slot of a --slots 2 run with the granted privileges"

# A privilege taken away after the start-up: each statement is refused
# (SQLSTATE 42501), which no retry heals: 69 at once, one line, CMD never run.
sql "REVOKE UPDATE ON \"${prefix}leases\" FROM $role"
rm -f -- "$T/ran"
assert_exit 69 timeout -k 2 20 "$SIMBA" run --backend "$uri" --mutex p -- touch "$T/ran"
[[ ! -e $T/ran ]] || fail "CMD ran without a lease"
assert_eq 1 "$(wc -l <"$T/err")" "lines on stderr ($(cat -- "$T/err"))"
grep -Eq '^simba: error: postgres://.* refused acquire for p: .*permission denied.* \(README "ACL users"\)$' "$T/err" ||
  fail "unexpected line: $(cat -- "$T/err")"
! grep -q 'role-pw' "$T/err" || fail "the password was shown"

# Tables of an older schema (columns missing) that the role may not bring
# up to date (the administrator owns them): 69, naming each missing column.
sql "GRANT UPDATE ON \"${prefix}leases\" TO $role;
     ALTER TABLE \"${prefix}leases\" DROP COLUMN losses, DROP COLUMN lease_ms;
     ALTER TABLE \"${prefix}history\" DROP COLUMN by_owner"
assert_exit 69 "$SIMBA" run --backend "$uri" --mutex p -- true
grep -Fq "(missing: columns \"${prefix}leases\".losses, \"${prefix}leases\".lease_ms, \"${prefix}history\".by_owner); " "$T/err" ||
  fail "the missing columns are not named: $(cat -- "$T/err")"
