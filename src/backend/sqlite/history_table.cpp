// The history table (history_table.hpp).
#include "backend/sqlite/history_table.hpp"

#include "backend/holder.hpp"
#include "backend/sqlite/connection.hpp"

#include <sqlite3.h>

#include <algorithm>

namespace simba::backend::sqlite {

const char* const k_sql_create_history =
    "CREATE TABLE IF NOT EXISTS simba_events(mutex TEXT NOT NULL, pos INTEGER NOT NULL, "
    "seq INTEGER NOT NULL, at INTEGER NOT NULL, event TEXT NOT NULL, owner TEXT NOT NULL, "
    "holder TEXT, token INTEGER NOT NULL, exit_code INTEGER, held_ms INTEGER, waited_ms INTEGER, "
    "reason TEXT, by_owner TEXT, PRIMARY KEY(mutex, pos)) WITHOUT ROWID";

namespace {

// ?2: pos, ?3: seq, ?10: the previous event's pos. at: never before the
// row's previous event. Each process turns its boot clock into wall time on
// its own, a millisecond or so apart, and history is read in time order: a
// release and the next acquisition by another process must not swap
// places. The previous event is a point lookup, in the leaf being written
// as often as not.
constexpr const char* k_sql_insert =
    "INSERT OR REPLACE INTO simba_events(mutex, pos, seq, at, event, owner, holder, token, "
    "exit_code, held_ms, waited_ms, reason, by_owner) VALUES (?1, ?2, ?3, MAX(?4, COALESCE(("
    "SELECT at FROM simba_events WHERE mutex = ?1 AND pos = ?10), ?4)), ?5, ?6, ?7, ?8, ?9, ?11, "
    "?12, ?13, ?14)";

// A smaller limit than an earlier writer's leaves events past it: dropped
// once per `limit` events (SIMBA_HISTORY_LIMIT is meant to be the same for
// every writer, so this finds nothing but after a change).
constexpr const char* k_sql_trim = "DELETE FROM simba_events WHERE mutex = ?1 AND pos >= ?2";

// A mutex's rows: its own and its slots' ("m#k"), a range of the key.
#define SIMBA_HISTORY_OF_MUTEX                                                                     \
  "(?1 = '' OR mutex = ?1 OR (mutex >= ?1 || '#' AND mutex < ?1 || '$'))"
#define SIMBA_HISTORY_COLUMNS                                                                      \
  "mutex, at, event, owner, holder, token, exit_code, held_ms, waited_ms"

constexpr const char* k_sql_read =
    "SELECT " SIMBA_HISTORY_COLUMNS
    ", reason, by_owner, seq FROM simba_events WHERE " SIMBA_HISTORY_OF_MUTEX
    " AND at >= ?2 ORDER BY at, mutex, seq";

// With the table of the simba before the ring (history_table.hpp), which
// has no lost events.
constexpr const char* k_sql_read_both =
    "SELECT * FROM (SELECT " SIMBA_HISTORY_COLUMNS ", reason, by_owner, seq FROM simba_events "
    "WHERE " SIMBA_HISTORY_OF_MUTEX " AND at >= ?2 UNION ALL SELECT " SIMBA_HISTORY_COLUMNS
    ", NULL, NULL, seq FROM simba_history WHERE " SIMBA_HISTORY_OF_MUTEX " AND at >= ?2) "
    "ORDER BY at, mutex, seq";

constexpr const char* k_added_history_columns[] = {"reason TEXT", "by_owner TEXT"};

#undef SIMBA_HISTORY_OF_MUTEX
#undef SIMBA_HISTORY_COLUMNS

template <typename T> void bind_optional(sqlite3_stmt* s, int i, const std::optional<T>& v) {
  if (v)
    sqlite3_bind_int64(s, i, *v);
  else
    sqlite3_bind_null(s, i);
}

template <typename T> std::optional<T> column_optional(sqlite3_stmt* s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
  return T(sqlite3_column_int64(s, i));
}

bool no_table(Connection& db) { return db.errmsg().find("no such table") != std::string::npos; }
bool no_column(Connection& db) { return db.errmsg().find("no such column") != std::string::npos; }

// The cached statement, the table made first when it is missing (or given
// the lost event's columns: a table an older simba made after ours was
// migrated).
sqlite3_stmt* statement(Connection& db, StmtId id, const char* sql) {
  if (sqlite3_stmt* s = db.stmt(id, sql)) return s;
  if (no_column(db)) {
    if (add_history_columns(db) != SQLITE_OK) return nullptr;
  } else if (!no_table(db) ||
             sqlite3_exec(db.db(), k_sql_create_history, nullptr, nullptr, nullptr) != SQLITE_OK) {
    return nullptr;
  }
  return db.stmt(id, sql);
}

// A failed step drops the statement: the table it was prepared on may
// have gone with a rolled-back transaction (one that made it).
int step_once(Connection& db, StmtId id, sqlite3_stmt* s) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc == SQLITE_DONE) return SQLITE_OK;
  sqlite3_finalize(s);
  db.keep(id, nullptr);
  return rc;
}

} // namespace

int add_history_columns(Connection& db) {
  for (const char* column : k_added_history_columns) {
    std::string sql = std::string("ALTER TABLE simba_events ADD COLUMN ") + column;
    if (sqlite3_exec(db.db(), sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK &&
        db.errmsg().find("duplicate column") == std::string::npos)
      return sqlite3_errcode(db.db());
  }
  return SQLITE_OK;
}

int append_history(Connection& db, const std::string& row, const HistoryEvent& e, int64_t seq,
                   int64_t limit) {
  sqlite3_stmt* s = statement(db, k_history_insert, k_sql_insert);
  if (!s) return sqlite3_errcode(db.db());
  const int64_t pos = seq % limit;
  bind_text(s, 1, row);
  sqlite3_bind_int64(s, 2, pos);
  sqlite3_bind_int64(s, 3, seq);
  sqlite3_bind_int64(s, 4, e.at);
  bind_text(s, 5, e.event);
  bind_text(s, 6, e.owner_id);
  if (e.holder)
    bind_text(s, 7, encode_holder(*e.holder));
  else
    sqlite3_bind_null(s, 7);
  sqlite3_bind_int64(s, 8, static_cast<sqlite3_int64>(e.token));
  bind_optional(s, 9, e.exit_code);
  sqlite3_bind_int64(s, 10, (seq - 1) % limit);
  bind_optional(s, 11, e.held_ms);
  bind_optional(s, 12, e.waited_ms);
  if (e.reason.empty())
    sqlite3_bind_null(s, 13);
  else
    bind_text(s, 13, e.reason);
  if (e.by.empty())
    sqlite3_bind_null(s, 14);
  else
    bind_text(s, 14, e.by);
  if (int rc = step_once(db, k_history_insert, s); rc != SQLITE_OK) return rc;
  if (pos != 0) return SQLITE_OK;
  sqlite3_stmt* t = statement(db, k_history_trim, k_sql_trim);
  if (!t) return sqlite3_errcode(db.db());
  bind_text(t, 1, row);
  sqlite3_bind_int64(t, 2, limit);
  return step_once(db, k_history_trim, t);
}

void prepare_history(Connection& db) { statement(db, k_history_insert, k_sql_insert); }

// The ring, and the table before it while it exists.
int read_history(Connection& db, const std::string& mutex, int64_t since_ms,
                 std::vector<HistoryEvent>& out) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db.db(), k_sql_read_both, -1, &s, nullptr) != SQLITE_OK &&
      sqlite3_prepare_v2(db.db(), k_sql_read, -1, &s, nullptr) != SQLITE_OK)
    return no_table(db) ? SQLITE_OK : sqlite3_errcode(db.db());
  bind_text(s, 1, mutex);
  sqlite3_bind_int64(s, 2, since_ms);
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    HistoryEvent e;
    e.mutex = column_text(s, 0);
    e.mutex.resize(std::min(e.mutex.size(), e.mutex.find('#'))); // a slot's: its mutex's
    e.at = sqlite3_column_int64(s, 1);
    e.event = column_text(s, 2);
    e.owner_id = column_text(s, 3);
    if (sqlite3_column_type(s, 4) != SQLITE_NULL) e.holder = decode_holder(column_text(s, 4));
    e.token = static_cast<uint64_t>(sqlite3_column_int64(s, 5));
    e.exit_code = column_optional<int>(s, 6);
    e.held_ms = column_optional<int64_t>(s, 7);
    e.waited_ms = column_optional<int64_t>(s, 8);
    if (sqlite3_column_type(s, 9) != SQLITE_NULL) e.reason = column_text(s, 9);
    if (sqlite3_column_type(s, 10) != SQLITE_NULL) e.by = column_text(s, 10);
    out.push_back(std::move(e));
  }
  sqlite3_finalize(s);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

} // namespace simba::backend::sqlite
