#!/usr/bin/env bash
# ctest's conformance/mysql: the backend conformance suite against the
# MariaDB named by SIMBA_TEST_MYSQL_URI (scripts/test starts one), with
# tables of its own (a prefix) so that runs never see each other's.
#
#   bash tests/backend/conformance_mysql.sh build/simba_conformance [doctest args]
#
# Exit 77 (skipped) when the variable is unset.
set -euo pipefail
bin=$1
shift
uri=${SIMBA_TEST_MYSQL_URI:-}
if [[ -z $uri ]]; then
  echo "mysql tests skipped: SIMBA_TEST_MYSQL_URI is not set (scripts/test starts a server and sets it)" >&2
  exit 77
fi
prefix="conf_$(date +%s)_$$_"
if [[ $uri == *\?* ]]; then uri+="&prefix=$prefix"; else uri+="?prefix=$prefix"; fi
export SIMBA_TEST_BACKEND=$uri
echo "conformance against ${SIMBA_TEST_BACKEND//\/\/*@///***@}" >&2
exec "$bin" "$@"
