#!/usr/bin/env bash
# Hostile ?schema= and ?prefix= names on PostgreSQL (issue 36 §5): a
# schema named to close its quotes and drop a table must name a schema of
# exactly that text (every identifier is quoted by one function), and the
# victim table survives; a schema PostgreSQL would cut (past 63 bytes) or
# a NUL is refused (64) before anything is sent, and so is a prefix that is
# not letters, digits and '_'. Every statement runs on the hostile schema:
# run, a waiter woken by LISTEN, --slots, status, history, release.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
use_test_postgres
command -v psql >/dev/null 2>&1 || skip "psql is not installed (package postgresql-client)"
admin=${SIMBA_TEST_POSTGRES_URI%%\?*}
# Short: a hostile name must fit in 63 bytes to reach the server.
tag="h$$x$((RANDOM % 1000))"
victim="${tag}v"
sql() { psql -X -q -v ON_ERROR_STOP=1 -At "$admin" -c "$1"; }
# The schemas this test may make: every name in pg_namespace that starts
# with $tag (dropped by the server, %I quoting: some names hold a newline).
cleanup() {
  local rc=$?
  sql "DO \$\$DECLARE s text; BEGIN
         FOR s IN SELECT nspname FROM pg_namespace WHERE starts_with(nspname, '$tag') LOOP
           EXECUTE format('DROP SCHEMA %I CASCADE', s);
         END LOOP; END\$\$" >/dev/null 2>&1 || echo "could not drop the test's schemas" >&2
  sql "DROP TABLE IF EXISTS public.$victim" >/dev/null 2>&1 || true
  return "$rc"
}
trap 'cleanup; _e2e_cleanup' EXIT
sql "CREATE TABLE public.$victim (x int)"
victim_alive() {
  assert_eq 1 "$(sql "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'
                        AND tablename = '$victim'")" "the victim table after: $1"
}
# percent-encodes every byte: the URI carries the name exactly
enc() { printf %s "$1" | od -An -v -tx1 | tr -d ' \n' | sed 's/../%&/g'; }

# 1. The injection of issue 36: the name closes its quote, drops the
# victim, commits (the script's later failure would roll the drop back),
# and comments the rest of the line out.
hostile="$tag\"; DROP TABLE public.$victim; COMMIT; --"
export SIMBA_BACKEND="$admin?schema=$(enc "$hostile")"
rc=0
"$SIMBA" run --mutex m -- echo ran >"$T/out" 2>"$T/err" || rc=$?
victim_alive "run in a hostile schema"
assert_eq "0 ran" "$rc $(cat -- "$T/out")" "simba's exit and CMD's output ($(cat -- "$T/err"))"
# The schema of exactly that name holds simba's tables, and no other was made.
hostile_sql=${hostile//\'/\'\'}
assert_eq 4 "$(sql "SELECT count(*) FROM pg_tables WHERE schemaname = '$hostile_sql'
                      AND tablename LIKE 'simba\\_%'")" "simba's tables in the schema of that name"
assert_eq 1 "$(sql "SELECT count(*) FROM pg_namespace WHERE starts_with(nspname, '$tag')")" \
  "schemas made"

# Every statement on it: a holder and a waiter (LISTEN, the queue), slots,
# status, history, a forced release.
# The holder holds until told: a waiter is queued (status lists it), then
# the holder ends and the waiter runs.
"$SIMBA" run --mutex w -- sh -c 'touch "$0"; while [ ! -e "$1" ]; do sleep 0.05; done' \
  "$T/held" "$T/go" >"$T/holder.out" 2>&1 &
holder=$!
wait_file "$T/held" 20
"$SIMBA" run --mutex w --timeout 60s -- echo waited >"$T/waiter.out" 2>"$T/waiter.err" &
waiter=$!
waiters_of_w() { "$SIMBA" status --mutex w --json | jq -e '.mutexes[0].waiters | length == 1'; }
wait_for 20 waiters_of_w
touch "$T/go"
wait "$holder" || fail "the holder failed: $(cat -- "$T/holder.out")"
wait "$waiter" || fail "the waiter failed: $(cat -- "$T/waiter.err")"
assert_eq waited "$(cat -- "$T/waiter.out")" "the waiter's CMD"
assert_exit 0 "$SIMBA" run --mutex s --slots 2 -- echo slot
assert_exit 0 "$SIMBA" status --all --json
assert_eq '"free"' "$(jq '.mutexes[] | select(.mutex == "m") | .state' "$T/out")" "m's state"
assert_exit 0 "$SIMBA" history --mutex w --json
assert_eq 2 "$(jq '[.events[] | select(.event == "acquired")] | length' "$T/out")" \
  "acquisitions of w in the history"
assert_exit 0 "$SIMBA" release --mutex m --force
victim_alive "the statements of status, history and release"

# 2. Other hostile texts, each a schema of its own: quotes of both kinds,
# a backslash, a semicolon and a comment, a newline, UTF-8.
i=0
for name in "$tag'; DROP TABLE public.$victim; --" "$tag\\\"\\\"" "$tag-- ;/* */" \
  "${tag}$(printf 'a\nb')" "${tag}_é\"ß"; do
  i=$((i + 1))
  assert_exit 0 "$SIMBA" run --backend "$admin?schema=$(enc "$name")" --mutex m -- echo "ran $i"
  assert_eq "ran $i" "$(cat -- "$T/out")" "CMD's output in hostile schema $i"
  name_sql=${name//\'/\'\'}
  assert_eq 1 "$(sql "SELECT count(*) FROM pg_tables WHERE schemaname = '$name_sql'
                        AND tablename = 'simba_leases'")" "the leases table of hostile schema $i"
  victim_alive "hostile schema $i"
done

# 3. Refused before anything is sent: a name PostgreSQL would cut to 63
# bytes (two names would share one schema), a NUL, and hostile prefixes.
long="$tag$(printf 'x%.0s' $(seq $((64 - ${#tag}))))"
assert_exit 64 "$SIMBA" run --backend "$admin?schema=$long" --mutex m -- true
grep -q 'schema name must be 1 to 63 bytes' "$T/err" || fail "no reason: $(cat -- "$T/err")"
assert_exit 0 "$SIMBA" run --backend "$admin?schema=${long:0:63}" --mutex m -- true
assert_exit 64 "$SIMBA" run --backend "$admin?schema=$tag%00x" --mutex m -- true
grep -q 'without NUL' "$T/err" || fail "no reason: $(cat -- "$T/err")"
for prefix in "p\"; DROP TABLE public.$victim; --" "p'" 'p"' 'a b' 'a.b'; do
  assert_exit 64 "$SIMBA" run --backend "$admin?schema=$tag&prefix=$(enc "$prefix")" \
    --mutex m -- true
  grep -q "the prefix may hold only letters, digits and '_'" "$T/err" ||
    fail "prefix '$prefix' refused without a reason: $(cat -- "$T/err")"
done
victim_alive "the refused names"
