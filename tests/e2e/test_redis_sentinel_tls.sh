#!/usr/bin/env bash
# rediss+sentinel://: TLS to the sentinel and to the master it names, with
# one ?cacert= for both (docs/backends/redis.md "Redis Sentinel"). A master, a replica and a
# sentinel, all TLS only (tls-replication yes), with a CA the test makes. A
# run and a hand-over work; a sentinel that cannot be trusted, and a master
# whose certificate does not name the address the sentinel gives (127.0.0.1),
# end simba with 69 and one line; after SENTINEL FAILOVER a run reaches the
# new master.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/tls_pki.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/sentinel_common.sh"

needs openssl redis-server redis-cli

make_pki
make_cert good DNS:localhost,IP:127.0.0.1
make_cert noip DNS:localhost
start_tls_redis good --tls-replication yes
master=$TLS_PORT
start_tls_redis good --tls-replication yes --replicaof 127.0.0.1 "$master"
replica=$TLS_PORT
start_tls_redis noip --tls-replication yes
noip=$TLS_PORT

tcli() { # PORT ARGS...
  local port=$1
  shift
  timeout 2 redis-cli --tls --cacert "$PKI/ca.crt" -h 127.0.0.1 -p "$port" "$@" 2>/dev/null
}

mkdir -p -- "$T/sentinel"
sentinel=$(_free_port)
cat >"$T/sentinel/s.conf" <<CONF
port 0
tls-port $sentinel
bind 127.0.0.1
dir $T/sentinel
logfile $T/sentinel/sentinel.log
tls-cert-file $PKI/good.crt
tls-key-file $PKI/good.key
tls-ca-cert-file $PKI/ca.crt
tls-auth-clients no
tls-replication yes
sentinel monitor mymaster 127.0.0.1 $master 1
sentinel down-after-milliseconds mymaster 1000
sentinel failover-timeout mymaster 10000
sentinel monitor noip 127.0.0.1 $noip 1
CONF
redis-server "$T/sentinel/s.conf" --sentinel </dev/null >/dev/null 2>&1 &
knows_replica() { tcli "$sentinel" SENTINEL replicas mymaster | grep -qx "127.0.0.1:$replica"; }
wait_for 40 knows_replica

uri() { echo "rediss+sentinel://127.0.0.1:$sentinel/$1?cacert=$PKI/${2:-ca}.crt&timeout=2s"; }
export SIMBA_BACKEND
SIMBA_BACKEND=$(uri mymaster)

# 1. A run (a fresh master would quarantine its first lease: the master just
# started is marked new, through the TLS Sentinel URI).
assert_exit 0 "$SIMBA" doctor --init
assert_exit 0 "$SIMBA" run --mutex m --ttl 1s --transition 1s -- true
[[ $(tcli "$master" EXISTS 'simba:{m}:fence') == 1 ]] || fail "the lease did not go to the TLS master"

# 2. A hand-over over the waiter's TLS subscription to the master.
"$SIMBA" run --mutex m -- sh -c 'touch "$1"; i=0
  while [ ! -e "$0" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done' "$T/go" "$T/holding" &
holder=$!
wait_file "$T/holding" 10
"$SIMBA" run --mutex m -- touch "$T/waiter.ran" &
waiter=$!
queued() { test "$(tcli "$master" ZCARD 'simba:{m}:waiters')" = 1; }
wait_for 15 queued
touch "$T/go"
rc=0
wait "$waiter" || rc=$?
assert_eq 0 "$rc" "the waiter's exit status"
wait "$holder" || fail "the holder failed"
[[ -e $T/waiter.ran ]] || fail "the waiter's CMD did not run"

# expect_69 URI PATTERN: exit 69, one line on stderr matching PATTERN, CMD not run
expect_69() {
  assert_exit 69 timeout -k 2 20 "$SIMBA" run --backend "$1" --mutex m -- touch "$T/ran"
  [[ $(wc -l <"$T/err") == 1 ]] || fail "$1: more than one line: $(cat -- "$T/err")"
  grep -q -- "^simba: error: $2" "$T/err" || fail "$1: unexpected message: $(cat -- "$T/err")"
  [[ ! -e $T/ran ]] || fail "$1: CMD ran"
}

# 3. A sentinel signed by a CA we do not trust.
expect_69 "$(uri mymaster other-ca)" \
  "cannot find the Redis master 'mymaster': no sentinel answers (sentinel 127.0.0.1:$sentinel: .*certificate"
# 4. The master's certificate must name the address the sentinel gives.
expect_69 "$(uri noip)" "cannot connect to Redis at 127.0.0.1:$noip: TLS: .*IP address mismatch"

# 5. A failover: the next run reaches the promoted replica, over TLS.
[[ $(tcli "$sentinel" SENTINEL FAILOVER mymaster) == OK ]] || fail "SENTINEL FAILOVER refused"
promoted() { tcli "$sentinel" SENTINEL get-master-addr-by-name mymaster | grep -qx "$replica"; }
wait_for 30 promoted
assert_exit 0 timeout -k 2 30 "$SIMBA" run --mutex m --ttl 1s --transition 1s -- true
[[ $(tcli "$replica" EXISTS 'simba:{m}:fence') == 1 ]] || fail "the lease is not on the promoted replica"
