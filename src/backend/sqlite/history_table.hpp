#pragma once
// The history of the SQLite backend (Backend::history): a ring of events
// per lease row, the table simba_events keyed by (mutex, pos) (WITHOUT
// ROWID: one B-tree). The row's history_seq (schema.hpp) counts its events;
// event number seq goes to pos = seq % limit, replacing the one `limit`
// events older: one INSERT OR REPLACE per event, inside the transaction of
// the operation that makes it, which changes one leaf of the table (an
// append and a trim changed two, and a trim searched for the mutex's last
// seq again). The ring is the row's: a --slots mutex keeps `limit` events
// per slot ("m#k", shown as m's). simba_history, the table of the simba
// before the ring (keyed by (mutex, seq), trimmed at every event), is read
// with it while it exists: a simba of that version still running writes
// there. Made with a new database and when an older one is migrated
// (schema.cpp), else on the first event.
#include "backend/backend.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace simba::backend::sqlite {

class Connection;

// CREATE TABLE IF NOT EXISTS simba_events.
extern const char* const k_sql_create_history;

// The lost event's columns (reason, by_owner) added to a simba_events made
// by an older simba (a column already there is fine); an SQLite code.
int add_history_columns(Connection& db);

// Writes `e` (e.mutex ignored) as event number `seq` (from 1) of lease row
// `row` into its ring of `limit` events; an SQLite code. Its time is never
// before the row's previous event's.
int append_history(Connection& db, const std::string& row, const HistoryEvent& e, int64_t seq,
                   int64_t limit);

// Prepares append_history's statement (the table made first when missing),
// so that the next append does not parse it.
void prepare_history(Connection& db);

// The events of `mutex` (empty: all) at or after `since_ms`, oldest first
// (none: no table yet); an SQLite code.
int read_history(Connection& db, const std::string& mutex, int64_t since_ms,
                 std::vector<HistoryEvent>& out);

} // namespace simba::backend::sqlite
