#!/usr/bin/env bash
# ctest's conformance/postgres and conformance/pgbouncer: the backend
# conformance suite against the PostgreSQL named by SIMBA_TEST_POSTGRES_URI,
# or through the PgBouncer (transaction pooling) of SIMBA_TEST_PGBOUNCER_URI,
# with tables of its own (a prefix) so that runs never see each other's.
#
#   bash tests/backend/conformance_postgres.sh postgres|pgbouncer build/simba_conformance [doctest args]
#
# Exit 77 (skipped) when the variable is unset; scripts/test sets both.
set -euo pipefail
via=$1 bin=$2
shift 2
var=SIMBA_TEST_POSTGRES_URI
[[ $via == pgbouncer ]] && var=SIMBA_TEST_PGBOUNCER_URI
uri=${!var:-}
if [[ -z $uri ]]; then
  echo "$via tests skipped: $var is not set (scripts/test starts a server and sets it)" >&2
  exit 77
fi
prefix="conf_$(date +%s)_$$_"
if [[ $uri == *\?* ]]; then uri+="&prefix=$prefix"; else uri+="?prefix=$prefix"; fi
export SIMBA_TEST_BACKEND=$uri
echo "conformance against ${SIMBA_TEST_BACKEND//\/\/*@///***@}" >&2
exec "$bin" "$@"
