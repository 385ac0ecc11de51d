#!/usr/bin/env bash
# A fake "PostgreSQL" that misbehaves during authentication (issue 33 §1):
# a wrong SCRAM server signature, none at all, a huge iteration count, a
# truncated or cut message, an unknown or a GSSAPI request, the password
# in clear text without TLS, an ErrorResponse mid-SCRAM. Each is a clear
# exit 69, well within the call's timeout (nothing hangs), and the
# password is never printed.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
command -v python3 >/dev/null 2>&1 || skip "needs python3 (the fake server)"
"$SIMBA" --version | grep -q postgres || skip "simba was built without PostgreSQL"
secret=fake-server-secret-pw

# try MODE REASON: simba against the fake server in MODE exits 69 within
# 3 s (its timeout is 5 s) saying REASON.
try() {
  local mode=$1 reason=$2 start ms
  rm -f -- "$T/port"
  python3 "$(dirname -- "${BASH_SOURCE[0]}")/pg_fake_server.py" "$mode" "$T/port" &
  local pid=$!
  wait_file "$T/port" 10
  start=$(date +%s%N)
  assert_exit 69 "$SIMBA" run --timeout 1s --mutex m \
    --backend "postgres://u:$secret@127.0.0.1:$(<"$T/port")/db?sslmode=disable&timeout=5s&scram_cache=off" \
    -- true
  ms=$((($(date +%s%N) - start) / 1000000))
  kill "$pid" 2>/dev/null || true
  { wait "$pid"; } 2>/dev/null || true
  echo "$mode: ${ms} ms: $(cat -- "$T/err")" >&2
  ((ms < 3000)) || fail "$mode: ${ms} ms, not refused at once"
  grep -q -- "$reason" "$T/err" || fail "$mode: not the reason '$reason': $(cat -- "$T/err")"
  ! grep -qF -- "$secret" "$T/out" "$T/err" || fail "$mode: the password was printed"
}

try bad-signature "SCRAM authentication failed"
try no-signature "without proving that it knows the password"
try huge-iterations "iteration"
try truncated "truncated authentication request"
try cut "closed the connection"
try unknown-auth "unknown authentication request (code 99)"
try gss "Kerberos/GSSAPI/SSPI"
try cleartext "clear text on a connection without TLS"
try error "the fake server says no"
