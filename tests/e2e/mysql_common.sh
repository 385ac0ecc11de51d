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
  # Its port is picked free, but only bound after mariadb-install-db's
  # second or two: another test's server may take it meanwhile ("Address
  # already in use", once in a CI run). Then again, on another port.
  local try
  for try in 1 2 3; do
    my_server_start "$T/my$try" && my_server_wait 60 && return 0
    grep -qs 'Address already in use' -- "$MY_DIR/error.log" || break
    my_server_stop
  done
  fail "cannot start a MariaDB server of our own"
}
