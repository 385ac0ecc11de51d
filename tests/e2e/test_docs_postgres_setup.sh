#!/usr/bin/env bash
# docs/backends/postgres.md, "Set up the server in 5 minutes", run as printed
# on the PostgreSQL of scripts/test: the administrator's SQL (a role, a
# database it owns, the role's timeouts), then the host's lines (~/.pgpass,
# SIMBA_BACKEND, a run, status): simba makes its tables in that database at
# the first use. Then the least-privilege variant: a schema the role owns in
# a database it does not. What cannot be as printed here: the names (the
# role and the database get names of this test's own, the server being
# shared), the host and port (the test server's), and sslmode=require (the
# test server has no TLS: prefer). Last, the SQL for a role that may create
# nothing (the tables and its grants, backend/postgres/setup_sql.hpp: the
# unit test test_backend_postgres_setup checks that the page prints what the
# code makes), run as printed: the role then runs simba without CREATE.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
use_test_postgres
needs psql
page=$_e2e_root/docs/backends/postgres.md
[[ -f $page ]] || fail "no $page"
PATH="$(dirname -- "$SIMBA"):$PATH"
export PATH

block() { # NAME: the fenced block after its marker
  awk -v marker="<!-- runnable: $1 (tests/e2e/test_docs_postgres_setup.sh) -->" '
    $0 == marker { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$page"
}
admin=${SIMBA_TEST_POSTGRES_URI%%\?*}
hostport=$(sed -E 's#^postgres(ql)?://[^@]*@([^/]+)/.*#\2#' <<<"$admin")
[[ $hostport == *:* ]] || fail "cannot read host:port from $admin"
role="docs_r_$$_$RANDOM" db="docs_d_$$_$RANDOM" role2="docs_s_$$_$RANDOM"
role3="docs_g_$$_$RANDOM" db3="docs_g_$$_$RANDOM"
sql_file() { # DATABASE FILE: as the administrator, one statement after another
  psql -X -q -v ON_ERROR_STOP=1 "${admin%/*}/$1" -f "$2" >"$T/psql.out" 2>&1 ||
    fail "the page's SQL failed: $(cat "$T/psql.out")"
}
drop_all() {
  local rc=$?
  psql -X -q "${admin%/*}/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" \
    -c "DROP DATABASE IF EXISTS $db3 WITH (FORCE)" >/dev/null 2>&1
  psql -X -q "${admin%/*}/postgres" -c "DROP ROLE IF EXISTS $role" -c "DROP ROLE IF EXISTS $role2" \
    -c "DROP ROLE IF EXISTS $role3" >/dev/null 2>&1
  return "$rc"
}
trap 'drop_all; _e2e_cleanup' EXIT

setup=$(block pg-setup-sql)
client=$(block pg-setup-client)
schema=$(block pg-setup-schema)
grants=$(block pg-setup-grants)
[[ -n $setup && -n $client && -n $schema && -n $grants ]] || fail "docs/backends/postgres.md: a marked set-up block is missing"

# The administrator's SQL, with this test's names.
grep -q '^CREATE DATABASE simba OWNER simba;$' <<<"$setup" || fail "the set-up no longer makes a database the role owns: update this test"
sed -E -e "s/ROLE simba( |;)/ROLE $role\\1/g" -e "s/DATABASE simba OWNER simba;/DATABASE $db OWNER $role;/" \
  <<<"$setup" >"$T/setup.sql"
grep -v "^--" "$T/setup.sql" | grep -qw simba && fail "a name of the set-up's SQL was left: $(cat "$T/setup.sql")"
sql_file postgres "$T/setup.sql"
config=$(psql -X -At "${admin%/*}/postgres" -c "SELECT array_to_string(rolconfig, ',') FROM pg_roles WHERE rolname = '$role'")
[[ $config == *statement_timeout=2s*idle_in_transaction_session_timeout=2s* ]] ||
  fail "the role's timeouts: $config"

# The host's lines, with this test's names and the test server.
export HOME=$T/home
mkdir -p "$HOME"
sed -E -e "s#'db\\.internal:5432:simba:simba:#'$hostport:$db:$role:#" \
  -e "s#postgres://simba@db\\.internal/simba\\?sslmode=require#postgres://$role@$hostport/$db?sslmode=prefer#" \
  <<<"$client" >"$T/client.sh"
grep -q "^echo '$hostport:$db:$role:SIMBA-PASSWORD' >>~/.pgpass" "$T/client.sh" ||
  fail "the .pgpass line is not the one this test knows: $(cat "$T/client.sh")"
grep -q "postgres://$role@$hostport/$db?sslmode=prefer" "$T/client.sh" ||
  fail "the URI is not the one this test knows: $(cat "$T/client.sh")"
unset PGPASSWORD
assert_exit 0 timeout 60 bash -e "$T/client.sh"
grep -q '^held on db.internal$' "$T/out" || fail "the host's run did not run: $(cat "$T/out") $(cat "$T/err")"
grep -Eq '^hello +free ' "$T/out" || fail "the host's status does not show the mutex: $(cat "$T/out")"
assert_eq 600 "$(stat -c %a "$HOME/.pgpass")" "the mode of ~/.pgpass"
tables=$(psql -X -At "${admin%/*}/$db" -c "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'simba\\_%' AND tableowner = '$role'")
assert_eq 4 "$tables" "simba's tables made by the role in its database"

# A schema of its own for a role that owns nothing else there.
grep -q '^CREATE SCHEMA simba AUTHORIZATION simba;$' <<<"$schema" || fail "the schema variant changed: update this test"
sed -E -e "s/ROLE simba /ROLE $role2 /" -e "s/AUTHORIZATION simba;/AUTHORIZATION $role2;/" <<<"$schema" >"$T/schema.sql"
sql_file "$db" "$T/schema.sql"
uri="postgres://$role2:SIMBA-PASSWORD@$hostport/$db?schema=simba"
assert_exit 0 "$SIMBA" run --backend "$uri" --mutex hello -- echo "held in schema simba"
tables=$(psql -X -At "${admin%/*}/$db" -c "SELECT count(*) FROM pg_tables WHERE schemaname = 'simba' AND tableowner = '$role2'")
assert_eq 4 "$tables" "simba's tables in the role's own schema"

# A role that may create nothing, in a database it does not own: refused at
# its first use (69, the tables missing), then the page's SQL as printed
# (the role's name is this test's), and simba runs as that role.
grep -q '^GRANT USAGE ON SCHEMA "public" TO "simba";$' <<<"$grants" ||
  fail "the grants no longer name the role simba: update this test"
psql -X -q -v ON_ERROR_STOP=1 "${admin%/*}/postgres" -c "CREATE DATABASE $db3" \
  -c "CREATE ROLE $role3 LOGIN PASSWORD 'SIMBA-PASSWORD'" >"$T/psql.out" 2>&1 ||
  fail "cannot make the role and database: $(cat "$T/psql.out")"
uri="postgres://$role3:SIMBA-PASSWORD@$hostport/$db3"
assert_exit 69 "$SIMBA" run --backend "$uri" --mutex hello -- true
grep -q "may not create simba's tables" "$T/err" || fail "the role could create: $(cat "$T/err")"
sed -E 's/ TO "simba";$/ TO "'"$role3"'";/' <<<"$grants" >"$T/grants.sql"
grep -qw simba_leases "$T/grants.sql" && ! grep -q '"simba"' "$T/grants.sql" ||
  fail "the role's name was left: $(cat "$T/grants.sql")"
sql_file "$db3" "$T/grants.sql"
assert_exit 0 "$SIMBA" run --backend "$uri" --mutex hello -- echo "held without CREATE"
assert_exit 0 "$SIMBA" run --backend "$uri" --mutex s --slots 2 -- true
assert_exit 0 "$SIMBA" status --all --backend "$uri"
grep -Eq '^hello +free ' "$T/out" || fail "status as the role: $(cat "$T/out")"
