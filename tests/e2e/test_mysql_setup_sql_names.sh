#!/usr/bin/env bash
# The SQL `simba doctor --sql mysql --backend URI` prints for an
# administrator (and a user without CREATE is told at its first use) quotes
# the URI's database and user name: an administrator who runs it for a
# user named o'hara`x on the database we`ird grants just that, and a user
# name or database that holds "'; DROP DATABASE ...; --" runs nothing of
# its own (the canary database is still there).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/mysql_common.sh"
needs mariadb
start_own_mysql
my_server_sql "CREATE DATABASE canary;
CREATE DATABASE \`we\`\`ird\`;
CREATE USER 'o''hara\`x'@'%' IDENTIFIED BY 'odd-pw';
CREATE DATABASE d; CREATE USER 'x'@'%';" || fail "cannot make the database and user"

# The odd names: the printed SQL, run by an administrator, lets the user lock.
uri="mysql://o%27hara%60x@127.0.0.1:$MY_PORT/we%60ird?prefix=p_&tls=disable"
assert_exit 0 "$SIMBA" doctor --sql mysql --backend "$uri"
cp -- "$T/out" "$T/odd.sql"
my_server_sql "$(<"$T/odd.sql")" || fail "the printed SQL failed: $(<"$T/odd.sql")"
SIMBA_MYSQL_PASSWORD=odd-pw assert_exit 0 "$SIMBA" run --backend "$uri" --mutex m -- true

# A user name and a database that try to end their quotes (the user x and
# the database d are there: unquoted, the injected statement would run).
evil_user="x%27%40%27%25%27%3B%20DROP%20DATABASE%20canary%3B%20--%20"
evil_db="d%60%3B%20DROP%20DATABASE%20canary%3B%20--%20"
for u in "$evil_user@127.0.0.1:$MY_PORT/simba" "plain@127.0.0.1:$MY_PORT/$evil_db"; do
  my_server_sql "CREATE DATABASE IF NOT EXISTS canary" || fail "no canary"
  assert_exit 0 "$SIMBA" doctor --sql mysql --backend "mysql://$u"
  my_server_sql "$(<"$T/out")" >/dev/null 2>&1 || true
  [[ $(my_server_sql "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'canary'") == 1 ]] ||
    fail "the SQL printed for mysql://$u dropped the canary: $(<"$T/out")"
done
