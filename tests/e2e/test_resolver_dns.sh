#!/usr/bin/env bash
# Host names go through simba's own resolver (src/backend/net/resolve.hpp),
# not glibc's: simba is pointed at a DNS server of this test's own
# (dns_server.py, port 53 of a loopback address of its own) by a resolv.conf
# bind-mounted over /etc/resolv.conf in a mount namespace of its own
# (unshare -m). Redis and PostgreSQL are reached by name: an A record, a
# CNAME chain within one answer, a search domain, a truncated UDP answer
# asked again over TCP, and a reply with a wrong id that must be ignored
# (its address answers nothing). A server that does not answer costs no
# more than the call's timeout (2 s; resolv.conf's own 5 s x 2 tries would
# be 10 s), and says so in one line; an unknown name is NXDOMAIN.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
needs python3 unshare mount
[[ -e /etc/resolv.conf ]] || not_applicable "no /etc/resolv.conf to bind-mount over"
unshare -m true 2>/dev/null || not_applicable "unshare -m is not permitted here (needs root, CAP_SYS_ADMIN)"
needs_backend redis postgres
use_test_postgres
pg_uri=$SIMBA_BACKEND
use_test_redis
redis_uri=$SIMBA_BACKEND

# The DNS server on 127.53.X.Y:53 (another test may hold one address).
here=$(dirname -- "${BASH_SOURCE[0]}")
for ((try = 0; try < 5; try++)); do
  dns_ip=127.53.$((RANDOM % 254 + 1)).$((RANDOM % 254 + 1))
  rm -f -- "$T/dns.ready"
  python3 "$here/dns_server.py" --address "$dns_ip" --target 127.0.0.1 \
    --log "$T/dns.log" --ready "$T/dns.ready" 2>"$T/dns.err" &
  dns_pid=$!
  while [[ ! -e $T/dns.ready ]] && pid_alive "$dns_pid"; do sleep 0.05; done
  [[ -e $T/dns.ready ]] && break
done
[[ -e $T/dns.ready ]] || fail "the DNS server did not start: $(cat -- "$T/dns.err")"
# glibc's defaults (timeout:5 attempts:2), longer than the call's 2 s.
printf 'nameserver %s\nsearch simba.test\n' "$dns_ip" >"$T/resolv.conf"

# simba with the test's resolv.conf; the host of URI $1 replaced by $2.
run_by_name() {
  local uri=${1/127.0.0.1/$2}
  shift 2
  unshare -m sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$T/resolv.conf" \
    timeout -k 5 30 env SIMBA_BACKEND="$uri" "$SIMBA" "$@"
}
asked() { grep -qx -- "$1" "$T/dns.log" || fail "the DNS server was not asked '$1': $(cat -- "$T/dns.log")"; }
# A run that reaches its server by name $2 (URI $1); the DNS log afresh.
by_name_ok() {
  : >"$T/dns.log"
  assert_exit 0 run_by_name "$1" "$2" run --mutex m -- true
}

by_name_ok "$redis_uri" redis.simba.test
asked 'udp redis.simba.test A'
asked 'udp redis.simba.test AAAA'
by_name_ok "$redis_uri" alias.simba.test
asked 'udp alias.simba.test A'
! grep -q ' redis.simba.test ' "$T/dns.log" || fail "the CNAME's target was asked again: $(cat -- "$T/dns.log")"
by_name_ok "$redis_uri" redis # no dot: the search domain first
asked 'udp redis.simba.test A'
by_name_ok "$redis_uri" big.simba.test
asked 'udp big.simba.test A'
asked 'tcp big.simba.test A'
by_name_ok "$redis_uri" wrongid.simba.test # 192.0.2.1 would not have answered
asked 'udp wrongid.simba.test A'
by_name_ok "$pg_uri" pg.simba.test
asked 'udp pg.simba.test A'

# No answer: the call's 2 s, then exit 69 and one line naming the server.
t0=$(now_ms)
assert_exit 69 run_by_name "$redis_uri" silent.simba.test run --mutex m --no-wait -- true
dt=$(($(now_ms) - t0))
((dt >= 1500 && dt < 4000)) || fail "a silent DNS server took ${dt} ms (the call's timeout is 2 s)"
# (The seconds waited, rounded: 2s, or a little less when simba was slow
# to start its call.)
grep -Eq "could not resolve host silent.simba.test: no answer from $dns_ip within (2|1\.[5-9])s\$" "$T/err" ||
  fail "no one-line resolver error: $(cat -- "$T/err")"

assert_exit 69 run_by_name "$pg_uri" nothing.simba.test run --mutex m --no-wait -- true
grep -q "could not resolve host nothing.simba.test: no such host (NXDOMAIN from $dns_ip)" "$T/err" ||
  fail "no one-line resolver error: $(cat -- "$T/err")"
echo ok
