// The done records of --once-per (done_records.hpp). Statements are
// prepared per use: not on any hot path, and the connection's statement
// cache stays the lease table's.
#include "backend/sqlite/done_records.hpp"

#include "backend/sqlite/connection.hpp"

#include <sqlite3.h>

#include <string>

namespace simba::backend::sqlite {
namespace {

constexpr const char* k_sql_create =
    "CREATE TABLE IF NOT EXISTS simba_done(mutex TEXT PRIMARY KEY, window_start INTEGER, "
    "label TEXT, host TEXT, token INTEGER, started_at INTEGER, finished INTEGER, "
    "exit_code INTEGER, finished_at INTEGER, period_ms INTEGER, offset_ms INTEGER) WITHOUT ROWID";

// The run's terms (core::DoneRecord), added to a table of an older simba.
constexpr const char* k_sql_probe_terms = "SELECT period_ms, offset_ms FROM simba_done LIMIT 0";
constexpr const char* k_sql_add_terms =
    "ALTER TABLE simba_done ADD COLUMN period_ms INTEGER; "
    "ALTER TABLE simba_done ADD COLUMN offset_ms INTEGER";

constexpr const char* k_sql_select_done =
    "SELECT window_start, label, host, token, started_at, finished, exit_code, finished_at, "
    "coalesce(period_ms, 0), coalesce(offset_ms, 0) FROM simba_done WHERE mutex = ?1";
constexpr const char* k_sql_select_done_without_terms =
    "SELECT window_start, label, host, token, started_at, finished, exit_code, finished_at, "
    "0, 0 FROM simba_done WHERE mutex = ?1";

constexpr const char* k_sql_write_done =
    "INSERT OR REPLACE INTO simba_done(mutex, window_start, label, host, token, started_at, "
    "finished, exit_code, finished_at, period_ms, offset_ms) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

} // namespace

int ensure_done_table(Connection& db) {
  int rc = sqlite3_exec(db.db(), k_sql_create, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return rc;
  sqlite3_stmt* probe = nullptr;
  rc = sqlite3_prepare_v2(db.db(), k_sql_probe_terms, -1, &probe, nullptr);
  sqlite3_finalize(probe);
  if (rc == SQLITE_OK) return rc;
  // Not an error when it fails: another simba may have added them
  // meanwhile, or the database is only read (status: select_done reads the
  // record without them; a write_done would fail and say why).
  sqlite3_exec(db.db(), k_sql_add_terms, nullptr, nullptr, nullptr);
  return SQLITE_OK;
}

int select_done(Connection& db, const std::string& mutex, std::optional<core::DoneRecord>& out) {
  out.reset();
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db.db(), k_sql_select_done, -1, &s, nullptr);
  if (rc != SQLITE_OK &&
      std::string(sqlite3_errmsg(db.db())).find("no such column") != std::string::npos)
    rc = sqlite3_prepare_v2(db.db(), k_sql_select_done_without_terms, -1, &s, nullptr);
  if (rc != SQLITE_OK) {
    // No table: nobody used --once-per on this database yet.
    bool missing = std::string(sqlite3_errmsg(db.db())).find("no such table") != std::string::npos;
    return missing ? SQLITE_OK : rc;
  }
  bind_text(s, 1, mutex);
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    core::DoneRecord r;
    r.window_start = sqlite3_column_int64(s, 0);
    r.label = column_text(s, 1);
    r.host = column_text(s, 2);
    r.token = static_cast<uint64_t>(sqlite3_column_int64(s, 3));
    r.started_at = sqlite3_column_int64(s, 4);
    r.finished = sqlite3_column_int64(s, 5) != 0;
    r.exit_code = static_cast<int>(sqlite3_column_int64(s, 6));
    r.finished_at = sqlite3_column_int64(s, 7);
    r.period_ms = sqlite3_column_int64(s, 8);
    r.offset_ms = sqlite3_column_int64(s, 9);
    out = std::move(r);
  }
  sqlite3_finalize(s);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int write_done(Connection& db, const std::string& mutex, const core::DoneRecord& r) {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db.db(), k_sql_write_done, -1, &s, nullptr);
  if (rc != SQLITE_OK) return rc;
  bind_text(s, 1, mutex);
  sqlite3_bind_int64(s, 2, r.window_start);
  bind_text(s, 3, r.label);
  bind_text(s, 4, r.host);
  sqlite3_bind_int64(s, 5, static_cast<sqlite3_int64>(r.token));
  sqlite3_bind_int64(s, 6, r.started_at);
  sqlite3_bind_int(s, 7, r.finished ? 1 : 0);
  sqlite3_bind_int(s, 8, r.exit_code);
  sqlite3_bind_int64(s, 9, r.finished_at);
  sqlite3_bind_int64(s, 10, r.period_ms);
  sqlite3_bind_int64(s, 11, r.offset_ms);
  rc = sqlite3_step(s);
  sqlite3_finalize(s);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int ensure_last_run_table(Connection& db) {
  return sqlite3_exec(db.db(),
                      "CREATE TABLE IF NOT EXISTS simba_last_run(mutex TEXT PRIMARY KEY, "
                      "started_at INTEGER) WITHOUT ROWID",
                      nullptr, nullptr, nullptr);
}

int select_last_run(Connection& db, const std::string& mutex, std::optional<int64_t>& out) {
  out.reset();
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db.db(), "SELECT started_at FROM simba_last_run WHERE mutex = ?1", -1,
                              &s, nullptr);
  if (rc != SQLITE_OK) return rc;
  bind_text(s, 1, mutex);
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) out = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int write_last_run(Connection& db, const std::string& mutex, int64_t at) {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(
      db.db(), "INSERT OR REPLACE INTO simba_last_run(mutex, started_at) VALUES (?1, ?2)", -1, &s,
      nullptr);
  if (rc != SQLITE_OK) return rc;
  bind_text(s, 1, mutex);
  sqlite3_bind_int64(s, 2, at);
  rc = sqlite3_step(s);
  sqlite3_finalize(s);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

} // namespace simba::backend::sqlite
