#!/usr/bin/env bash
# A PostgreSQL URI's password in messages (issue 36 §7, issue 32 §1):
# libpq splits user info at its first '@', simba masked up to the last, so
# 'admin:MyP@ssw0rdSecret@localhost' printed 'ssw0rdSecret@localhost' as a
# host name. Two '@' are refused now (64, percent-encode); an encoded one
# works and never shows. And a port is not a secret: 'host:1' was shown
# as '***27.0.0.***:***'. No server needed (port 1 refuses).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
"$SIMBA" --version | grep -q postgres || skip "simba was built without PostgreSQL"
unset SIMBA_BACKEND
run_with() { "$SIMBA" run --backend "$1" --timeout 1s --mutex m -- echo ran; }
no_secret() {
  local word
  for word in MyP ssw0rd Secret; do
    ! grep -q -- "$word" "$T/err" || fail "$1: the password shows: $(cat -- "$T/err")"
  done
}

assert_exit 64 run_with 'postgresql://admin:MyP@ssw0rdSecret@localhost/db?timeout=1s'
grep -q "percent-encode it as %40" "$T/err" || fail "no hint: $(cat -- "$T/err")"
assert_eq 1 "$(wc -l <"$T/err")" "one line: $(cat -- "$T/err")"
no_secret "two '@'"

assert_exit 69 run_with 'postgresql://admin:MyP%40ssw0rdSecret@127.0.0.1:1/db?timeout=1s'
grep -q '127\.0\.0\.1:1/db' "$T/err" || fail "host or port masked: $(cat -- "$T/err")"
no_secret "an encoded '@'"

assert_exit 69 run_with 'postgres://127.0.0.1:1/db?timeout=1s'
grep -q 'postgres://127\.0\.0\.1:1/db' "$T/err" || fail "port masked: $(cat -- "$T/err")"
grep -q '\*\*\*' "$T/err" && fail "something masked without a password: $(cat -- "$T/err")"

# user:secret without '@host': the secret is read as a port (as libpq
# reads it); masked.
assert_exit 69 run_with 'postgres://u:ssw0rdSecret/db?timeout=1s'
no_secret "a password without a host"
true
