#!/usr/bin/env bash
# TLS to MySQL through the SSL request (issue 34): a MariaDB of the test's
# own with a certificate for localhost signed by the test's CA. verify-full with that CA works; a CA that signed nothing of ours is
# refused (69), each line saying what to change; verify-full refuses a name the certificate does not carry,
# which verify-ca and require accept; disable speaks plain; doctor says the
# connection is encrypted (a warning when its certificate is not checked,
# none on a Unix socket).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/mysql_common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/tls_pki.sh"
needs openssl
make_pki
make_cert server "DNS:localhost"
chmod 755 -- "$PKI"
chmod 644 -- "$PKI"/*.key
MY_EXTRA_OPTIONS=(--ssl-ca="$PKI/ca.crt" --ssl-cert="$PKI/server.crt" --ssl-key="$PKI/server.key")
start_own_mysql
port=${MY_URI##*:}
port=${port%%/*}
base="mysql://simba:$MY_PASSWORD@localhost:$port/simba"

assert_exit 0 "$SIMBA" run --backend "$base?tls=verify-full&cacert=$PKI/ca.crt" --mutex m -- true
assert_exit 69 "$SIMBA" run --backend "$base?tls=verify-full&cacert=$PKI/other-ca.crt" \
  --mutex m -- true
grep -q "TLS" "$T/err" || fail "a foreign CA refused without naming TLS: $(<"$T/err")"
# Each refusal says what to change, once "TLS: ".
grep -qF "(did $PKI/other-ca.crt sign it?)" "$T/err" || fail "a foreign CA: $(<"$T/err")"
! grep -q "TLS: TLS" "$T/err" || fail "TLS: twice: $(<"$T/err")"
# "127.0.0.1" is not in the certificate: verify-full refuses, verify-ca and
# require do not check the name.
other="mysql://simba:$MY_PASSWORD@127.0.0.1:$port/simba"
assert_exit 69 "$SIMBA" run --backend "$other?tls=verify-full&cacert=$PKI/ca.crt" --mutex m -- true
grep -qF "(tls=verify-full: the certificate must name 127.0.0.1; verify-ca checks the CA only)" "$T/err" ||
  fail "a name the certificate does not carry: $(<"$T/err")"
assert_exit 0 "$SIMBA" run --backend "$other?tls=verify-ca&cacert=$PKI/ca.crt" --mutex m -- true
assert_exit 0 "$SIMBA" run --backend "$other?tls=require" --mutex m -- true
assert_exit 0 "$SIMBA" run --backend "$other?tls=disable" --mutex m -- true
"$SIMBA" doctor --backend "$base?tls=verify-full&cacert=$PKI/ca.crt" >"$T/out" 2>&1 || true
grep -Eq '^ok +tls +the connection is encrypted' "$T/out" || fail "doctor: $(cat -- "$T/out")"
# Encrypted without a checked certificate is a warning; a Unix socket needs no TLS.
"$SIMBA" doctor --backend "$other?tls=require" >"$T/out" 2>&1 || true
grep -Eq "^warn +tls +the connection is encrypted, but the server's certificate is not checked" "$T/out" ||
  fail "doctor, tls=require: $(cat -- "$T/out")"
"$SIMBA" doctor --backend "mysql://simba:$MY_PASSWORD@localhost/simba?socket=$MY_SOCKET" >"$T/out" 2>&1 || true
grep -Eq '^ok +tls +a Unix socket' "$T/out" || fail "doctor, a socket: $(cat -- "$T/out")"
