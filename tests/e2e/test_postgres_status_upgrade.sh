#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# Tables made by a simba without status (no holder columns, no history)
# gain them at the first use, status included; a lease written there
# before shows no holder; a lease taken since by such a simba (a new token,
# the holder columns untouched) shows none either, not the one before it
# (the holder belongs to its token); history works on the upgraded tables.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
use_test_postgres
needs psql jq
admin=${SIMBA_TEST_POSTGRES_URI%%\?*}
prefix="upg_$$_${RANDOM}_"
sql() { psql -X -q -v ON_ERROR_STOP=1 -At "$admin" -c "$1"; }
drop_tables() {
  local rc=$?
  sql "DROP TABLE IF EXISTS \"${prefix}leases\", \"${prefix}server\", \"${prefix}waiters\",
         \"${prefix}history\"" >/dev/null 2>&1
  return "$rc"
}
trap 'drop_tables; _e2e_cleanup' EXIT
export SIMBA_BACKEND="${admin}?prefix=$prefix"
now_ms='floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint'

# The tables as the first PostgreSQL backend made them, with a lease.
sql "CREATE TABLE \"${prefix}leases\" (
  mutex text PRIMARY KEY, owner text NOT NULL, acquired_at bigint NOT NULL,
  ttl_at bigint NOT NULL, transition_at bigint NOT NULL, token bigint NOT NULL,
  holding boolean NOT NULL, last_run_at bigint, once_window bigint, once_label text,
  once_host text, once_token bigint, once_started_at bigint, once_finished boolean,
  once_exit_code integer, once_finished_at bigint);
CREATE TABLE \"${prefix}server\" (
  id integer PRIMARY KEY CHECK (id = 1), run text NOT NULL, until_ms bigint NOT NULL,
  longest bigint NOT NULL);
CREATE TABLE \"${prefix}waiters\" (
  mutex text NOT NULL, contender text NOT NULL, channel text NOT NULL,
  queued_at bigint NOT NULL, pid integer NOT NULL, PRIMARY KEY (mutex, contender));
INSERT INTO \"${prefix}server\" SELECT 1, extract(epoch FROM pg_postmaster_start_time())::text, 0, 0;
INSERT INTO \"${prefix}leases\" (mutex, owner, acquired_at, ttl_at, transition_at, token, holding)
  SELECT 'old', 'older', $now_ms, $now_ms + 60000, $now_ms + 62000, 42, false" ||
  fail "cannot make the old tables"

assert_exit 0 "$SIMBA" status --mutex old --json
assert_eq "older true" "$(jq -r '.mutexes[0] | "\(.owner) \(.holders[0].pid == null)"' "$T/out")" \
  "the old lease, no holder"
assert_eq 4 "$(sql "SELECT count(*) FROM information_schema.columns WHERE column_name IN
  ('holder', 'holder_token', 'history_seq') AND table_name IN ('${prefix}leases', '${prefix}waiters')")" \
  "the columns added by status"

# A lease of ours: its holder; then an older simba takes the mutex.
"$SIMBA" run --mutex t --ttl 1s --transition 1s -- sh -c 'touch "$0"; exec sleep 60' "$T/t" &
run=$!
wait_file "$T/t" 10
assert_exit 0 "$SIMBA" status --mutex t --json
assert_eq "$run run" "$(jq -r '.mutexes[0].holders[0] | "\(.pid) \(.via)"' "$T/out")" "our holder"
kill -KILL "$run"
wait "$run" 2>/dev/null || true
sql "UPDATE \"${prefix}leases\" SET owner = 'older', token = token + 1, acquired_at = $now_ms,
       ttl_at = $now_ms + 60000, transition_at = $now_ms + 62000 WHERE mutex = 't'" ||
  fail "the older simba's acquire"
assert_exit 0 "$SIMBA" status --mutex t --json
assert_eq "older null" "$(jq -r '.mutexes[0] | "\(.owner) \(.holders[0].pid)"' "$T/out")" \
  "a lease taken by an older simba shows no holder"

"$SIMBA" run --mutex h --contender-id one -- true || fail "a run on the upgraded tables"
assert_exit 0 "$SIMBA" history --mutex h --json
assert_eq '["acquired one","released one"]' "$(jq -c '[.events[] | "\(.event) \(.label)"]' "$T/out")" \
  "history on the upgraded tables"
