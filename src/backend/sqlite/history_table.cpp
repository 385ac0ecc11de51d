// The history table (history_table.hpp).
#include "backend/sqlite/history_table.hpp"

#include "backend/holder.hpp"
#include "backend/sqlite/connection.hpp"

#include <sqlite3.h>

namespace simba::backend::sqlite {

const char* const k_sql_create_history =
    "CREATE TABLE IF NOT EXISTS simba_history(mutex TEXT NOT NULL, seq INTEGER NOT NULL, "
    "at INTEGER NOT NULL, event TEXT NOT NULL, owner TEXT NOT NULL, holder TEXT, "
    "token INTEGER NOT NULL, exit_code INTEGER, held_ms INTEGER, waited_ms INTEGER, "
    "PRIMARY KEY(mutex, seq)) WITHOUT ROWID";

namespace {

// seq: one more than the mutex's last (a seek to the end of its range).
// at: never before the mutex's last event. Each process turns its boot
// clock into wall time on its own, a millisecond or so apart, and history
// is read in time order: a release and the next acquisition by another
// process must not swap places.
constexpr const char* k_sql_insert =
    "INSERT INTO simba_history(mutex, seq, at, event, owner, holder, token, exit_code, held_ms, "
    "waited_ms) SELECT ?1, COALESCE(last.seq, 0) + 1, MAX(?2, COALESCE(last.at, ?2)), ?3, ?4, "
    "?5, ?6, ?7, ?8, ?9 FROM (SELECT 1) LEFT JOIN (SELECT seq, at FROM simba_history WHERE "
    "mutex = ?1 ORDER BY seq DESC LIMIT 1) AS last";

constexpr const char* k_sql_trim =
    "DELETE FROM simba_history WHERE mutex = ?1 AND seq <= (SELECT MAX(seq) FROM simba_history "
    "WHERE mutex = ?1) - ?2";

constexpr const char* k_sql_read =
    "SELECT mutex, at, event, owner, holder, token, exit_code, held_ms, waited_ms FROM "
    "simba_history WHERE (?1 = '' OR mutex = ?1) AND at >= ?2 ORDER BY at, mutex, seq";

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

// The cached statement, the table made first when it is missing.
sqlite3_stmt* statement(Connection& db, StmtId id, const char* sql) {
  if (sqlite3_stmt* s = db.stmt(id, sql)) return s;
  if (!no_table(db) ||
      sqlite3_exec(db.db(), k_sql_create_history, nullptr, nullptr, nullptr) != SQLITE_OK)
    return nullptr;
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

int append_history(Connection& db, const std::string& mutex, const HistoryEvent& e, int64_t limit) {
  sqlite3_stmt* s = statement(db, k_history_insert, k_sql_insert);
  sqlite3_stmt* t = s ? statement(db, k_history_trim, k_sql_trim) : nullptr;
  if (!t) return sqlite3_errcode(db.db());
  bind_text(s, 1, mutex);
  sqlite3_bind_int64(s, 2, e.at);
  bind_text(s, 3, e.event);
  bind_text(s, 4, e.owner_id);
  if (e.holder)
    bind_text(s, 5, encode_holder(*e.holder));
  else
    sqlite3_bind_null(s, 5);
  sqlite3_bind_int64(s, 6, static_cast<sqlite3_int64>(e.token));
  bind_optional(s, 7, e.exit_code);
  bind_optional(s, 8, e.held_ms);
  bind_optional(s, 9, e.waited_ms);
  if (int rc = step_once(db, k_history_insert, s); rc != SQLITE_OK) return rc;
  bind_text(t, 1, mutex);
  sqlite3_bind_int64(t, 2, limit);
  return step_once(db, k_history_trim, t);
}

int read_history(Connection& db, const std::string& mutex, int64_t since_ms,
                 std::vector<HistoryEvent>& out) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db.db(), k_sql_read, -1, &s, nullptr) != SQLITE_OK)
    return no_table(db) ? SQLITE_OK : sqlite3_errcode(db.db());
  bind_text(s, 1, mutex);
  sqlite3_bind_int64(s, 2, since_ms);
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    HistoryEvent e;
    e.mutex = column_text(s, 0);
    e.at = sqlite3_column_int64(s, 1);
    e.event = column_text(s, 2);
    e.owner_id = column_text(s, 3);
    if (sqlite3_column_type(s, 4) != SQLITE_NULL) e.holder = decode_holder(column_text(s, 4));
    e.token = static_cast<uint64_t>(sqlite3_column_int64(s, 5));
    e.exit_code = column_optional<int>(s, 6);
    e.held_ms = column_optional<int64_t>(s, 7);
    e.waited_ms = column_optional<int64_t>(s, 8);
    out.push_back(std::move(e));
  }
  sqlite3_finalize(s);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

} // namespace simba::backend::sqlite
