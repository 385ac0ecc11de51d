# shellcheck shell=bash
# Shared by the e2e tests on MySQL; source it after common.sh:
#
#   use_test_mysql      needs_backend mysql: SIMBA_TEST_MYSQL_URI (scripts/test
#                       starts a MariaDB and sets it); then exports
#                       SIMBA_BACKEND as that URI with tables of this
#                       test's own (a prefix)
#   start_own_mysql     a server of the test's own (mysql_server.sh: MY_URI,
#                       MY_PID, my_server_spawn...), for tests that kill or
#                       restart it
source "$(dirname -- "${BASH_SOURCE[0]}")/mysql_server.sh"

use_test_mysql() {
  local sep='?'
  needs_backend mysql
  [[ $SIMBA_TEST_MYSQL_URI == *\?* ]] && sep='&'
  export SIMBA_BACKEND="${SIMBA_TEST_MYSQL_URI}${sep}prefix=e2e_$$_${RANDOM}${RANDOM}_"
}

start_own_mysql() {
  my_bin >/dev/null || skip "needs MariaDB's server (package mariadb-server)"
  chmod 711 -- "$T"
  my_server_start "$T/my" && my_server_wait 60 || fail "cannot start a MariaDB server of our own"
}
