#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# rediss://: simba over TLS to Debian's redis-server (--tls-port, --port 0),
# with a CA the test makes. A run and a hand-over work; a server that cannot
# be trusted (unknown CA, another name, an expired certificate), a server
# that wants a client certificate we do not give, and a server that never
# answers the handshake each end simba with 69 and one line, CMD not run.
# TLS loads no shared library: OpenSSL is linked in.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/tls_pki.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"

needs openssl redis-server redis-cli

make_pki
make_cert good DNS:localhost,IP:127.0.0.1
make_cert elsewhere DNS:elsewhere.example
make_cert expired DNS:localhost,IP:127.0.0.1 "20200101000000Z 20200102000000Z"
make_cert client DNS:simba-client
start_tls_redis good
good=$TLS_PORT good_pid=$TLS_PID
start_tls_redis elsewhere
elsewhere=$TLS_PORT
start_tls_redis expired
expired=$TLS_PORT
start_tls_redis good --tls-auth-clients yes
mtls=$TLS_PORT
start_tls_redis good --requirepass tls-pw-6
with_password=$TLS_PORT
start_own_redis # plain TCP
plain=$OWN_REDIS_PORT

# rediss://HOST:PORT/0 with the test's CA; a fresh server: no quarantine.
uri() { echo "rediss://$1:$2/0?cacert=$PKI/ca.crt&quarantine=off${3:-}"; }

# 1. A run, by name (SNI, DNS name checked) and by address (IP checked).
export SIMBA_BACKEND
SIMBA_BACKEND=$(uri localhost "$good")
assert_exit 0 "$SIMBA" run --mutex m -- sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0"' "$T/first.token"
assert_exit 0 "$SIMBA" run --backend "$(uri 127.0.0.1 "$good")" --mutex m -- true
assert_exit 0 "$SIMBA" status --json --all
grep -q '"mutex":"m"' "$T/out" || fail "status over TLS does not list m: $(cat -- "$T/out")"

# 2. A hand-over: the waiter, queued, becomes the owner in the holder's
# release (its calls: its first try and its release), over its TLS
# subscription.
queued() {
  test "$(redis-cli --tls --cacert "$PKI/ca.crt" -h localhost -p "$good" ZCARD 'simba:{m}:waiters')" = 1
}
"$SIMBA" run --mutex m -- sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0"; i=0
  while [ ! -e "$1" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done' "$T/holder.token" "$T/go" &
holder=$!
wait_for 10 test -s "$T/holder.token"
SIMBA_CALL_COUNT_FILE="$T/calls" "$SIMBA" run --mutex m -- sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0"' \
  "$T/waiter.token" &
waiter=$!
wait_for 15 queued
touch "$T/go"
rc=0
wait "$waiter" || rc=$?
assert_eq 0 "$rc" "the waiter's exit status"
wait "$holder"
(($(<"$T/waiter.token") > $(<"$T/holder.token") && $(<"$T/holder.token") > $(<"$T/first.token"))) ||
  fail "tokens do not increase: $(<"$T/first.token") $(<"$T/holder.token") $(<"$T/waiter.token")"
read -r _ calls <"$T/calls"
assert_eq 2 "$calls" "the waiter's backend calls (a hand-over; an acquire of its own makes 3)"

# 3. Refusals: 69, one line saying why, CMD not run.
refused() { # PATTERN URI
  rm -f -- "$T/ran"
  assert_exit 69 "$SIMBA" run --backend "$2" --mutex m -- touch "$T/ran"
  [[ ! -e $T/ran ]] || fail "CMD ran with $2"
  assert_eq 1 "$(wc -l <"$T/err")" "lines on stderr ($(cat -- "$T/err"))"
  grep -Eq "^simba: error: .*$1" "$T/err" || fail "expected '$1', got: $(cat -- "$T/err")"
}
refused "not trusted: self-signed certificate in certificate chain" \
  "rediss://localhost:$good/0?cacert=$PKI/other-ca.crt&quarantine=off"
refused "not trusted: self-signed certificate in certificate chain" \
  "rediss://localhost:$good/0?quarantine=off" # the system's store
refused "not trusted: IP address mismatch" "$(uri 127.0.0.2 "$good")"
refused "not trusted: hostname mismatch" "$(uri localhost "$elsewhere")"
refused "not trusted: certificate has expired" "$(uri localhost "$expired")"
refused "the server wants a client certificate: .cert=FILE&key=FILE" "$(uri localhost "$mtls")"
# A server that wants a password and gets none says so, as over plain TCP.
refused "requires a password" "$(uri localhost "$with_password")"
# The wrong scheme for the port: which one the server seems to speak.
refused "if that port speaks TLS, use rediss://" "redis://localhost:$good/0?quarantine=off"
refused "if that port is plain Redis, not TLS, use redis://" \
  "rediss://localhost:$plain/0?cacert=$PKI/ca.crt&quarantine=off&timeout=500ms"
refused "TLS: cannot read the CA file $T/nothing: No such file or directory$" \
  "rediss://localhost:$good/0?cacert=$T/nothing&quarantine=off"
echo 'no certificate here' >"$T/not-pem"
refused "TLS: cannot read the CA file $T/not-pem: no certificate or crl found$" \
  "rediss://localhost:$good/0?cacert=$T/not-pem&quarantine=off"
refused "TLS: cannot read the client key file $T/not-pem: " \
  "$(uri localhost "$mtls" "&cert=$PKI/client.crt&key=$T/not-pem")"

# The system's store, read as a hashed directory (SSL_CERT_DIR stands for
# /etc/ssl/certs): our CA there is trusted without ?cacert.
mkdir -p -- "$PKI/store"
cp -- "$PKI/ca.crt" "$PKI/store/"
openssl rehash "$PKI/store" >/dev/null 2>&1 || fail "openssl rehash failed"
assert_exit 0 env -u SSL_CERT_FILE SSL_CERT_DIR="$PKI/store" "$SIMBA" run --backend "rediss://localhost:$good/0?quarantine=off" \
  --mutex m -- true

# 4. A client certificate; insecure=1 trusts anything (only when named).
assert_exit 0 "$SIMBA" run --backend "$(uri localhost "$mtls" "&cert=$PKI/client.crt&key=$PKI/client.key")" \
  --mutex m -- true
assert_exit 0 "$SIMBA" run --backend "rediss://127.0.0.2:$expired/0?insecure=1&quarantine=off" \
  --mutex m -- true

# An ACL user over TLS (AUTH user password inside the TLS stream).
redis-cli --tls --cacert "$PKI/ca.crt" -h localhost -p "$good" ACL SETUSER tls-user on '>tls-pw-5' \
  '~*' '&*' '+@all' >/dev/null
SIMBA_REDIS_PASSWORD=tls-pw-5 assert_exit 0 "$SIMBA" run --backend "rediss://tls-user@localhost:$good/0?cacert=$PKI/ca.crt&quarantine=off" \
  --mutex m -- true

# 5. TLS loads no shared library: OpenSSL is linked into simba (a static
# program that dlopen()s a system library needs that library's glibc at
# run time). A holder's memory maps, read while its lease over TLS is
# held, name no .so; and simba works with libssl.so.3 hidden (in a mount
# namespace of our own, when we may make one).
"$SIMBA" run --backend "$(uri 127.0.0.1 "$good")" --mutex maps -- sh -c ': >"$0"; sleep 10' "$T/holding" &
holder=$!
wait_for 10 test -e "$T/holding"
cp -- "/proc/$holder/maps" "$T/maps" || fail "cannot read the holder's /proc/$holder/maps"
kill -TERM "$holder"
wait "$holder" || true
! grep -E '\.so([.[:space:]]|$)' "$T/maps" >"$T/libs" ||
  fail "simba over TLS loaded shared libraries: $(awk '{print $NF}' "$T/libs" | sort -u | tr '\n' ' ')"
lib=$(ldconfig -p 2>/dev/null | awk '/libssl\.so\.3 / && !lib {lib = $NF} END {print lib}')
if [[ -z $lib ]]; then
  echo "NOTE: no libssl.so.3 here to hide: nothing more to check" >&2
elif ! why=$(unshare -m true 2>&1); then
  # As root this fails only where mount namespaces cannot be made (a chroot
  # whose root is no mount point): not applicable there, said, not failed.
  ((EUID == 0)) || [[ ${CI:-} != true ]] ||
    fail "cannot make a mount namespace (unshare -m) to hide libssl.so.3"
  echo "NOTE: not applicable here: simba without libssl.so.3 (unshare -m: ${why:-needs root})" >&2
else
  lib=$(readlink -f -- "$lib")
  assert_exit 0 unshare -m sh -c 'mount --bind /dev/null "$0" && exec "$@"' "$lib" \
    "$SIMBA" run --backend "$(uri localhost "$good")" --mutex m -- true
fi

# 6. The handshake keeps the deadline: a server that accepts the connection
# (the kernel does) but never answers.
kill -STOP "$good_pid"
start=$(now_ms)
refused "cannot connect to Redis at localhost:$good: timed out" "$(uri localhost "$good" "&timeout=300ms")"
took=$(($(now_ms) - start))
kill -CONT "$good_pid"
((took < 3000)) || fail "the handshake took ${took} ms against a timeout of 300 ms"

# 7. A process's second connection to the same server (a waiter's
# subscription, a holder's after 200 ms) resumes the first one's TLS
# session; each process verifies the server in a full handshake of its
# own (no session outlives the process). tls_resumption_proxy.py relays
# to the server and logs each connection's ServerHello: "full" or
# "resumed".
command -v python3 >/dev/null 2>&1 || fail "needs python3 (scripts/test installs it)"
python3 "$(dirname -- "${BASH_SOURCE[0]}")/tls_resumption_proxy.py" "$good" "$T/proxy.port" \
  "$T/hellos" </dev/null >/dev/null 2>&1 &
wait_for 10 test -s "$T/proxy.port"
via=$(uri localhost "$(<"$T/proxy.port")")
"$SIMBA" run --backend "$via" --mutex resume -- sh -c ': >"$0"; i=0
  while [ ! -e "$1" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done' "$T/r-holding" "$T/r-go" &
holder=$!
wait_for 10 test -e "$T/r-holding"
"$SIMBA" run --backend "$via" --mutex resume -- true &
waiter=$!
resume_queued() {
  test "$(redis-cli --tls --cacert "$PKI/ca.crt" -h localhost -p "$good" ZCARD 'simba:{resume}:waiters')" = 1
}
wait_for 15 resume_queued
sleep 0.3 # the holder's own second connection, 200 ms into its CMD
touch "$T/r-go"
wait "$holder" || fail "the holder failed"
wait "$waiter" || fail "the waiter failed"
full=$(grep -c '^full$' "$T/hellos" || true)
resumed=$(grep -c '^resumed$' "$T/hellos" || true)
assert_eq 2 "$full" "full handshakes through the proxy, one per process ($(tr '\n' ' ' <"$T/hellos"))"
((resumed >= 1)) || fail "no connection resumed a session: $(tr '\n' ' ' <"$T/hellos")"
