#pragma once
// The history of the SQLite backend (Backend::history): the table
// simba_history, one row per event, keyed by (mutex, seq) (WITHOUT ROWID:
// one B-tree), written inside the transaction of the operation that makes
// the event and trimmed there to the last `limit` events of the mutex.
// Made with a new database and when an older one is migrated
// (schema.cpp), else on the first event.
#include "backend/backend.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace simba::backend::sqlite {

class Connection;

// CREATE TABLE IF NOT EXISTS simba_history.
extern const char* const k_sql_create_history;

// Appends `e` (e.mutex ignored: `mutex`) and drops the mutex's events
// older than the last `limit`; an SQLite code.
int append_history(Connection& db, const std::string& mutex, const HistoryEvent& e, int64_t limit);

// The events of `mutex` (empty: all) at or after `since_ms`, oldest first
// (none: no table yet); an SQLite code.
int read_history(Connection& db, const std::string& mutex, int64_t since_ms,
                 std::vector<HistoryEvent>& out);

} // namespace simba::backend::sqlite
