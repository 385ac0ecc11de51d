#!/usr/bin/env bash
# simba doctor on MySQL: the server's version, its role (writable), the
# durability of its writes, simba's tables (there, or the user may make
# them), the named lock of the hand-over; TLS not in use is a warning.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/mysql_common.sh"
use_test_mysql

rc=0
"$SIMBA" doctor >"$T/out" 2>&1 || rc=$?
cat -- "$T/out" >&2
grep -Eq '^ok +server-version +[0-9]+\.[0-9]+' "$T/out" || fail "no server version"
grep -Eq '^ok +replication-role +writable' "$T/out" || fail "not seen writable"
grep -Eq '^ok +tables +not all made yet; the user may create them' "$T/out" ||
  fail "a new prefix: the tables are not said to be made at the first use"
grep -Eq '^ok +hand-over +named locks' "$T/out" || fail "the hand-over's named lock"
grep -Eq '^warn +tls ' "$T/out" || fail "no TLS is not a warning"
! grep -q "$(sed 's|.*://[^:]*:\([^@]*\)@.*|\1|' <<<"$SIMBA_TEST_MYSQL_URI")" "$T/out" ||
  fail "the password was printed"

assert_exit 0 "$SIMBA" run --mutex m -- true
"$SIMBA" doctor >"$T/out" 2>&1 || true
grep -Eq "^ok +tables +simba's 5 tables are there" "$T/out" || fail "the tables, once made"

# A server that does not answer: the connection fails, its fix for MySQL.
assert_exit 69 "$SIMBA" doctor --backend "mysql://simba@127.0.0.1:1/simba"
grep -q "^fail *connection .* — fix: check the address, the user and its password (SIMBA_MYSQL_PASSWORD, ~/.my.cnf), tls= and the server (docs/backends/mysql.md)" "$T/out" ||
  fail "no MySQL fix for a connection that fails: $(<"$T/out")"
