#!/usr/bin/env bash
# Through PgBouncer in transaction mode with listen=on (the URI's default)
# LISTEN cannot work: no release would wake a waiter, and every hand-over
# would silently take until the lease's end. The first wait finds it out
# (a NOTIFY of its own that never comes back) and says so once on stderr,
# -v says how; the waiter then goes on without LISTEN and gets the mutex.
# On a direct connection the same wait says nothing (and an uncontended
# run sends nothing more: test_postgres_round_trips).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
needs_backend postgres pgbouncer
needs psql
admin=${SIMBA_TEST_POSTGRES_URI%%\?*}
prefix="pgbl_$$_${RANDOM}_"
direct="$admin?prefix=$prefix"
via="${SIMBA_TEST_PGBOUNCER_URI%%\?*}?prefix=$prefix" # listen=on: what is checked
drop_tables() {
  local rc=$?
  psql -X -q "$admin" -c "DROP TABLE IF EXISTS \"${prefix}leases\", \"${prefix}server\",
    \"${prefix}waiters\", \"${prefix}history\"" >/dev/null 2>&1
  return "$rc"
}
trap 'drop_tables; _e2e_cleanup' EXIT
assert_exit 0 "$SIMBA" run --backend "$direct" --mutex m -- true # the tables

# WAITER_URI [-v]: a holder (directly) for a second, a waiter through
# WAITER_URI.
contend() {
  rm -f -- "$T/held"
  "$SIMBA" run --backend "$direct" --mutex m --ttl 4s -- sh -c "touch '$T/held'; sleep 1" \
    >"$T/holder.out" 2>&1 &
  local holder=$!
  wait_for 10 test -e "$T/held"
  assert_exit 0 timeout 30 "$SIMBA" run ${2:-} --backend "$1" --mutex m --ttl 4s -- echo ran
  wait "$holder" || fail "the holder failed: $(cat -- "$T/holder.out")"
  grep -qx ran "$T/out" || fail "the waiter did not run: $(cat -- "$T/err")"
}

contend "$via"
assert_eq 1 "$(grep -c 'LISTEN does not work' "$T/err")" "notices of the deaf LISTEN ($(cat -- "$T/err"))"
grep -Eq '^simba: warning: LISTEN does not work at postgres://.*\(PgBouncer in transaction mode\?\): hand-overs wait for the lease.s end' "$T/err" ||
  fail "unexpected notice: $(cat -- "$T/err")"
! grep -q "did not come" "$T/err" || fail "how it was found, without -v: $(cat -- "$T/err")"
! grep -q "$(sed -E 's#^postgres://[^:]*:([^@]*)@.*#\1#' <<<"$admin")" "$T/err" || fail "the password was shown"
contend "$via" -v
assert_eq 1 "$(grep -c 'warning: LISTEN does not work' "$T/err")" "notices with -v ($(cat -- "$T/err"))"
grep -q "did not come on its LISTEN connection within" "$T/err" || fail "-v does not say how: $(cat -- "$T/err")"
# Out of the queue: no place of it is left for the releases to wake in vain.
left=$(psql -X -At "$admin" -c "SELECT count(*) FROM \"${prefix}waiters\"")
assert_eq 0 "$left" "queue entries left"

contend "$direct" -v
! grep -q 'LISTEN' "$T/err" || fail "a direct connection was said to be deaf: $(cat -- "$T/err")"
