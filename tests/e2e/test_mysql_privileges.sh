#!/usr/bin/env bash
# A MySQL user that may not create tables: its first use exits 69 naming
# the command that prints the SQL an administrator runs, `simba doctor
# --sql mysql --backend URI` (doctor's tables check names it too); an administrator runs that with the mariadb
# client, and the user then locks (its waiters' queue included: status
# lists a waiter). Without --backend: the database simba, the prefix
# simba_, the user simba.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/mysql_common.sh"
needs mariadb
start_own_mysql
my_server_sql "CREATE USER 'plain'@'%' IDENTIFIED BY 'plain-pw';
GRANT SELECT, INSERT, UPDATE, DELETE ON simba.* TO 'plain'@'%';" || fail "cannot make the user"
export SIMBA_BACKEND="mysql://plain@127.0.0.1:$MY_PORT/simba?prefix=p_"
export SIMBA_MYSQL_PASSWORD=plain-pw

assert_exit 69 "$SIMBA" run --mutex m -- true
cp -- "$T/err" "$T/refused"
grep -q 'may not create simba.s tables' "$T/refused" || fail "the 69 does not say why: $(<"$T/refused")"
assert_exit 0 "$SIMBA" doctor --sql mysql --backend "$SIMBA_BACKEND"
cp -- "$T/out" "$T/setup.sql"
grep -q "TO \`plain\`@'%';" "$T/setup.sql" || fail "no GRANT to plain: $(<"$T/setup.sql")"
grep -q '`p_waiters`' "$T/setup.sql" || fail "no waiters' table: $(<"$T/setup.sql")"
# The error names the command that prints that SQL (not the SQL itself:
# one error line is cut past 4 KiB, which a long prefix's SQL passes), and
# that command prints the same SQL.
shown=$(grep -o "simba doctor --sql mysql --backend '[^']*'" "$T/refused") ||
  fail "the 69 names no doctor --sql command: $(<"$T/refused")"
eval "\"\$SIMBA\" ${shown#simba }" >"$T/named.sql" || fail "the command named fails: $shown"
cmp -s -- "$T/setup.sql" "$T/named.sql" || fail "the command named prints other SQL: $shown"
long=mysql://plain@127.0.0.1:$MY_PORT/simba?prefix=a_prefix_of_forty_characters_0123456789_
# (doctor --sql never connects: the command names any host, localhost.)
long_shown=mysql://plain@localhost/simba?prefix=a_prefix_of_forty_characters_0123456789_
assert_exit 69 "$SIMBA" run --backend "$long" --mutex m -- true
grep -qF "doctor --sql mysql --backend '$long_shown'" "$T/err" || fail "a long prefix: $(<"$T/err")"
! grep -qF '[...' "$T/err" || fail "the 69 of a long prefix was cut: $(<"$T/err")"
"$SIMBA" doctor --backend "$long" >"$T/out" 2>&1 || true
grep -qF "fail  tables            simba's tables are missing and the user may not create them — fix: have an administrator run the SQL of \`simba doctor --sql mysql --backend '$long_shown'\`" "$T/out" ||
  fail "doctor's fix: $(<"$T/out")"

my_server_sql "$(<"$T/setup.sql")" || fail "the printed SQL failed"
assert_exit 0 "$SIMBA" run --mutex m -- true
"$SIMBA" run --mutex m -- sleep 2 &
holder=$!
held() { [[ $(mutex_state m) == held ]]; }
wait_for 10 held
"$SIMBA" run --mutex m -- true &
waiter=$!
queued() { "$SIMBA" status --mutex m --format json | grep -q '"position":1'; }
wait_for 10 queued
wait "$holder" "$waiter" || fail "a run on the administrator's tables failed"

assert_exit 0 env -u SIMBA_BACKEND "$SIMBA" doctor --sql mysql
grep -q "ON \`simba\`.\`simba_leases\` TO \`simba\`@'%';" "$T/out" || fail "the defaults: $(<"$T/out")"
assert_exit 64 "$SIMBA" doctor --sql mysql --backend "sqlite:$T/x.db"
