#!/usr/bin/env bash
# A PostgreSQL password never appears in simba's output: not in the URI's
# user info nor in its ?password= parameter, whether simba connects, is
# refused, cannot connect, is given a malformed URI, or logs (-v) and
# reports (status, --json).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
use_test_postgres
secret=${SIMBA_TEST_POSTGRES_URI#*://*:}
secret=${secret%%@*}
[[ -n $secret && $secret != "$SIMBA_TEST_POSTGRES_URI" ]] || fail "the test URI has no password"
base=${SIMBA_BACKEND#*@}  # host:port/db?prefix=...
prefix=${base#*prefix=}
hostdb=${base%%\?*}

check() { # check EXIT ARGS...: the exit status, and no secret on either stream
  assert_exit "$@"
  ! grep -qF -- "$secret" "$T/out" "$T/err" || fail "the password was printed by: ${*:2}"
  ! grep -qF -- "wrong-$secret" "$T/out" "$T/err" || fail "the password was printed by: ${*:2}"
}

check 0 "$SIMBA" run -v --mutex s -- true
check 0 "$SIMBA" status
# CMD's environment names the backend it holds (re-entry): without it.
check 0 env -u SIMBA_BACKEND -u SIMBA_TEST_POSTGRES_URI -u SIMBA_TEST_PGBOUNCER_URI "$SIMBA" run --backend "$SIMBA_BACKEND" --mutex s -- env
grep -q '^SIMBA_HELD=.*postgres://\*\*\*@' "$T/out" || fail "no backend in CMD's environment"
check 0 "$SIMBA" status --json
check 0 "$SIMBA" run -v --backend "postgres://simba@$hostdb?password=$secret&prefix=$prefix" \
  --mutex s -- true
# Refused: a wrong password, in the user info and as a parameter.
check 69 "$SIMBA" run --backend "postgres://simba:wrong-$secret@$hostdb" --mutex s -- true
grep -q 'password authentication failed' "$T/err" || fail "no reason given: $(cat -- "$T/err")"
check 69 "$SIMBA" run --backend "postgres://simba@$hostdb?password=wrong-$secret" --mutex s -- true
# No password at all: where to give one.
check 69 env -u PGPASSWORD PGPASSFILE=/nonexistent "$SIMBA" run --backend "postgres://simba@$hostdb" --mutex s -- true
grep -q 'no password supplied (give the password in PGPASSWORD, in ~/.pgpass' "$T/err" ||
  fail "no hint where the password goes: $(cat -- "$T/err")"
# Nobody there, and a URI that forgot its "@host" (libpq would read the
# password as a port).
check 69 "$SIMBA" run --backend "postgres://simba:$secret@127.0.0.1:1/db?timeout=2s" --mutex s -- true
check 69 "$SIMBA" run --backend "postgres://simba:$secret" --mutex s -- true
check 64 "$SIMBA" run --backend "postgres://simba:$secret@h/db?timeout=x" --mutex s -- true
