# shellcheck shell=bash
# The Debian 12 packages simba needs, in one place (sourced, never run):
#
#   SIMBA_BUILD_PACKAGES   what `cmake` and the build of every target need.
#                          scripts/simba installs these (its slow path only),
#                          scripts/test installs these and the next list.
#   SIMBA_TEST_PACKAGES    what the tests need on top: servers, tools.
#   SIMBA_TOOL_PACKAGES    command -> the package that has it, for the tools
#                          the tests run; `needs TOOL` (tests/e2e/common.sh)
#                          names the package when the tool is missing.
#
# The ctest test build/packages (tests/build/check_packages.py) fails when
# the build includes a header or links a library that no package of
# SIMBA_BUILD_PACKAGES (or one it depends on) provides, when a -dev package
# here provides nothing the build uses, and when a package of
# SIMBA_TOOL_PACKAGES is neither in the lists nor on every Debian (Essential
# or Priority required: bsdutils, dpkg, mount, passwd). The .deb's own
# dependencies (CMakeLists.txt, CPACK_DEBIAN_PACKAGE_*) are checked against
# what the binary loads by tests/e2e/test_package.sh.

# build-essential: the compiler, make, and the C and C++ library headers.
# libssl-dev: OpenSSL's headers and its archives (libssl.a, libcrypto.a),
# linked into simba for TLS; the binary needs no libssl3 at run time.
SIMBA_BUILD_PACKAGES=(build-essential cmake libcli11-dev libsqlite3-dev nlohmann-json3-dev
  doctest-dev libhiredis-dev libssl-dev)

SIMBA_TEST_PACKAGES=(
  redis-server                         # conformance/redis*, e2e-redis*, Sentinel, Cluster (and redis-cli)
  postgresql-15 postgresql-client-15   # the PostgreSQL tests' server, psql
  pgbouncer                            # the PgBouncer tests
  etcd-server etcd-client              # the etcd tests' cluster, etcdctl
  mariadb-server mariadb-client        # the MySQL tests' server (MariaDB 10.11), the mariadb client
  openssl                              # tests/e2e/tls_pki.sh makes the TLS test certificates
  python3 python3-prometheus-client    # chaos harness, helpers; the OpenMetrics parser
  jq sqlite3                           # reading `simba status --json`, the SQLite file
  procps util-linux iproute2           # ps; setpriv, unshare, nsenter; ip netns (Sentinel chaos)
  groff zsh fish                       # the man page and the completions
  systemd                              # systemd-analyze verify of README's unit
)

declare -A SIMBA_TOOL_PACKAGES=(
  [redis-server]=redis-server [redis-cli]=redis-server [psql]=postgresql-client-15
  [pgbouncer]=pgbouncer [mariadbd]=mariadb-server [mariadb]=mariadb-client [openssl]=openssl [python3]=python3 [jq]=jq [sqlite3]=sqlite3
  [ps]=procps [setpriv]=util-linux [unshare]=util-linux [nsenter]=util-linux
  [script]=bsdutils [mount]=mount [useradd]=passwd [ip]=iproute2 [groff]=groff
  [zsh]=zsh [fish]=fish [cmake]=cmake [cpack]=cmake [dpkg-deb]=dpkg
  [systemd-analyze]=systemd [etcd]=etcd-server [etcdctl]=etcd-client
)
