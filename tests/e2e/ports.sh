# shellcheck shell=bash
# random_server_port [ABOVE]: a random TCP port for a server the tests
# start themselves, below Linux's ephemeral ports (ip_local_port_range,
# 32768 and up by default), and ABOVE more ports below them too (a Redis
# Cluster node's bus port is its port + 10000).
#
# Why not any port: the kernel gives every outgoing connection an
# ephemeral port as its local port, and while one holds it no server can
# bind it. A test server killed and restarted on its own port then fails
# with "Address already in use" (once in CI: MariaDB, after a kill -9).
# The caller still checks that nothing answers on the port it gets.
# Sourced by scripts/test and the tests' server helpers.
random_server_port() {
  local above=${1:-0} low=32768 rest
  read -r low rest </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
  ((low - above > 12000)) || low=$((32768 + above)) # an odd range: the default's
  printf '%s\n' $((10000 + RANDOM % (low - above - 10000)))
}
