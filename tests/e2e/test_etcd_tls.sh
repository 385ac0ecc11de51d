#!/usr/bin/env bash
# backends: sqlite
# etcds:// (docs/backends/etcd.md): a member of the test's own that speaks
# TLS only and asks for client certificates (a CA of the test's own,
# tls_pki.sh). With ?cacert= and the client's ?cert=&key= simba runs; a
# server certificate from another CA, or no client certificate, and
# --no-wait ends with 69 at once (never a plain-text request).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs etcd openssl
source "$(dirname -- "${BASH_SOURCE[0]}")/tls_pki.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/etcd_server.sh"
make_pki
make_cert server DNS:localhost,IP:127.0.0.1
make_cert client DNS:client
ETCD_LISTEN=https etcd_single_start "$T/etcd" --cert-file "$PKI/server.crt" \
  --key-file "$PKI/server.key" --client-cert-auth --trusted-ca-file "$PKI/ca.crt" ||
  fail "cannot start an etcd member with TLS: $(tail -n 5 "$T/etcd/s.log")"
uri="etcds://127.0.0.1:${ETCD_CLIENT_PORTS[0]}"
bounded() { timeout -k 5 20 "$@"; }

assert_exit 0 bounded "$SIMBA" run --backend "$uri?cacert=$PKI/ca.crt&cert=$PKI/client.crt&key=$PKI/client.key" \
  --mutex m -- sh -c 'echo "$SIMBA_FENCING_TOKEN"'
[[ $(<"$T/out") -gt 0 ]] || fail "no fencing token: $(<"$T/out")"
assert_exit 0 bounded "$SIMBA" status --backend "$uri?cacert=$PKI/ca.crt&cert=$PKI/client.crt&key=$PKI/client.key" --all

# Another CA: the server is not trusted.
assert_exit 69 bounded "$SIMBA" run --no-wait --backend "$uri?cacert=$PKI/other-ca.crt&cert=$PKI/client.crt&key=$PKI/client.key" --mutex m -- true
grep -qi "certificate\|verify" "$T/err" || fail "no word of the certificate: $(<"$T/err")"
# No client certificate: the member refuses.
assert_exit 69 bounded "$SIMBA" run --no-wait --backend "$uri?cacert=$PKI/ca.crt" --mutex m -- true
# Plain etcd:// to a TLS member: an error, not a hang.
assert_exit 69 bounded "$SIMBA" run --no-wait --backend "etcd://127.0.0.1:${ETCD_CLIENT_PORTS[0]}?timeout=1s" --mutex m -- true
