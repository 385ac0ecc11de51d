#!/usr/bin/env bash
# --slots on PostgreSQL under READ COMMITTED: a statement reads the slots
# from the snapshot it started with, and one that waited for another
# writer of the mutex (its marker's row lock) must not decide on the slots
# as they were before that writer committed (src/backend/postgres/
# slots_sql.hpp). Staged with psql as that other writer, holding its
# transaction open while simba's statement starts:
#
# 1. It takes slot 1 (the marker moved over it) while `simba acquire
#    --slots 2 --no-wait` runs, whose snapshot shows slot 1 free: simba
#    gets nothing (75), slot 1 stays the other's, and the marker still
#    covers it.
# 2. It renews slot 1 to 2 h while simba releases slot 0, whose snapshot
#    shows slot 1 ending in 1 h: the marker must end with slot 1's new end,
#    not the old (a marker that ends first lets a plain contender, or
#    another N, in beside slot 1's holder).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
use_test_postgres
needs psql
admin=${SIMBA_TEST_POSTGRES_URI%%\?*}
prefix=${SIMBA_BACKEND##*prefix=}
leases="\"${prefix}leases\""
# simba's calls wait for the other writer's 2 s: a call timeout well past
# them (the default 2 s ran out first on a loaded machine).
export SIMBA_BACKEND="$SIMBA_BACKEND&timeout=10s"
sql() { psql -X -q -v ON_ERROR_STOP=1 -At "$admin" -c "$1"; }
# The other writer's clock: now(), one instant for its whole transaction
# (the marker and the slot's row end at the same millisecond).
now='(floor(extract(epoch FROM now()) * 1000)::bigint)'
# The marker ends no earlier than each slot ('t').
covered() {
  sql "SELECT (SELECT transition_at FROM $leases WHERE mutex = 'm') >=
              (SELECT max(transition_at) FROM $leases WHERE mutex LIKE 'm#%')"
}
# Runs the other writer's transaction (stdin: its statements) in the
# background; returns once it holds its locks (it then sleeps 2 s).
other_writer() {
  rm -f -- "$T/locked"
  { echo 'BEGIN;'; cat; echo "\\! touch $T/locked"; echo 'SELECT pg_sleep(2); COMMIT;'; } |
    psql -X -q -v ON_ERROR_STOP=1 "$admin" >"$T/psql.out" 2>&1 &
  writer=$!
  wait_file "$T/locked" 10
}

assert_exit 0 "$SIMBA" acquire --mutex m --slots 2 --ttl 30s --env-file "$T/a.env"
assert_eq 0 "$(sed -n 's/^SIMBA_SLOT=//p' "$T/a.env")" "the first job's slot"

# 1. Slot 1 taken by the other writer, as an acquisition does it.
other_writer <<SQL
UPDATE $leases SET ttl_at = $now + 3600000, transition_at = $now + 3600000, token = token + 1
  WHERE mutex = 'm';
INSERT INTO $leases (mutex, owner, acquired_at, ttl_at, transition_at, token, holding)
  SELECT 'm#1', 'X', $now, $now + 3600000, $now + 3600000, token, false FROM $leases
  WHERE mutex = 'm';
SQL
start=$(now_ms)
assert_exit 75 "$SIMBA" acquire --mutex m --slots 2 --ttl 30s --no-wait
waited=$(($(now_ms) - start))
wait "$writer" || fail "the other writer failed: $(cat -- "$T/psql.out")"
((waited >= 1000)) || fail "simba's acquire did not wait for the other writer (${waited} ms): no race"
assert_eq X "$(sql "SELECT owner FROM $leases WHERE mutex = 'm#1'")" "slot 1's owner"
assert_eq t "$(covered)" "the marker covers slot 1 after the acquire"

# 2. Slot 1 renewed by the other writer (to 2 h) while slot 0 is released.
other_writer <<SQL
UPDATE $leases SET ttl_at = $now + 7200000, transition_at = $now + 7200000
  WHERE mutex IN ('m', 'm#1');
SQL
start=$(now_ms)
(set -a && . "$T/a.env" && "$SIMBA" release --lease "$SIMBA_LEASE") || fail "release of slot 0"
waited=$(($(now_ms) - start))
wait "$writer" || fail "the other writer failed: $(cat -- "$T/psql.out")"
((waited >= 1000)) || fail "simba's release did not wait for the other writer (${waited} ms): no race"
assert_eq "" "$(sql "SELECT owner FROM $leases WHERE mutex = 'm#0'")" "slot 0's owner after the release"
assert_eq t "$(covered)" "the marker covers slot 1's renewal after the release"
assert_eq held "$(mutex_state m)" "the mutex, slot 1 still held"
assert_exit 64 "$SIMBA" run --mutex m --no-wait -- true
