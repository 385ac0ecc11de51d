#!/usr/bin/env bash
# A SQLite database made by the simba before the history ring (its lease
# table without history_seq, its history in simba_history, keyed by (mutex,
# seq)): a run migrates it (the column, the ring simba_events), writes its
# events to the ring, and `simba history` shows the old events and the new
# ones in time order. The old table is left as it was: a simba of that
# version still running writes there.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

needs sqlite3 jq

db=$T/old.db
export SIMBA_BACKEND=sqlite:$db
now_ms=$(($(date +%s) * 1000))
sqlite3 "$db" >/dev/null <<SQL
PRAGMA journal_mode=WAL;
CREATE TABLE simba_mutex(mutex TEXT PRIMARY KEY, owner_id TEXT NOT NULL, acquired_at INTEGER,
  ttl_at INTEGER, transition_at INTEGER, fencing_token INTEGER NOT NULL, boot_id TEXT,
  boot_acquired_at INTEGER, boot_ttl_at INTEGER, boot_transition_at INTEGER, boot_token INTEGER,
  holding INTEGER, holder TEXT, holder_token INTEGER) WITHOUT ROWID;
CREATE TABLE simba_history(mutex TEXT NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL,
  event TEXT NOT NULL, owner TEXT NOT NULL, holder TEXT, token INTEGER NOT NULL,
  exit_code INTEGER, held_ms INTEGER, waited_ms INTEGER, PRIMARY KEY(mutex, seq)) WITHOUT ROWID;
INSERT INTO simba_mutex(mutex, owner_id, acquired_at, ttl_at, transition_at, fencing_token)
  VALUES ('m', '', $((now_ms - 60000)), $((now_ms - 59000)), $((now_ms - 59000)), 7);
INSERT INTO simba_history VALUES ('m', 1, $((now_ms - 60000)), 'acquired', 'o', NULL, 7, NULL, NULL, 0);
INSERT INTO simba_history VALUES ('m', 2, $((now_ms - 59000)), 'released', 'o', NULL, 7, 0, 1000, NULL);
SQL

"$SIMBA" run --mutex m --contender-id new -q -- true || fail "a run on the old database failed"
"$SIMBA" run --mutex m --contender-id newer -q -- true || fail "a second run failed"
assert_exit 0 "$SIMBA" history --mutex m --json
assert_eq '["acquired 7","released 7","acquired new","released new","acquired newer","released newer"]' \
  "$(jq -c '[.events[] | "\(.event) \(if .fencing_token == 7 then "7" else .label end)"]' "$T/out")" \
  "the old table's events, then the ring's"
assert_eq 2 "$(sqlite3 "$db" "SELECT count(*) FROM simba_history")" "the old table untouched"
assert_eq 4 "$(sqlite3 "$db" "SELECT history_seq FROM simba_mutex WHERE mutex = 'm'")" \
  "the lease row counts its events"
assert_eq "1 2 3 4" "$(sqlite3 "$db" "SELECT group_concat(seq, ' ') FROM \
  (SELECT seq FROM simba_events WHERE mutex = 'm' ORDER BY seq)")" "the ring's events"
