# shellcheck shell=bash
# Shared by the e2e tests on PostgreSQL; source it after common.sh:
#
#   use_test_postgres [pgbouncer]  needs_backend postgres (or pgbouncer):
#                        SIMBA_TEST_POSTGRES_URI (or SIMBA_TEST_PGBOUNCER_URI;
#                        scripts/test starts a server and sets both); then exports
#                        SIMBA_BACKEND as that URI with tables of this
#                        test's own (a prefix)
#   start_own_postgres   a server of the test's own (postgres_server.sh:
#                        PG_URI, PG_PID, pg_server_spawn...), for tests that
#                        kill or restart it
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_server.sh"

use_test_postgres() {
  local var=SIMBA_TEST_POSTGRES_URI sep='?'
  [[ ${1:-} == pgbouncer ]] && var=SIMBA_TEST_PGBOUNCER_URI
  needs_backend "${1:-postgres}"
  [[ ${!var} == *\?* ]] && sep='&'
  export SIMBA_BACKEND="${!var}${sep}prefix=e2e_$$_${RANDOM}${RANDOM}_"
}

start_own_postgres() {
  pg_bin_dir >/dev/null || skip "needs PostgreSQL 15's server (package postgresql-15)"
  # The server runs as simba-pg when we are root: it must reach its directory.
  chmod 711 -- "$T"
  pg_server_start "$T/pg" || fail "cannot start a PostgreSQL server of our own"
}
