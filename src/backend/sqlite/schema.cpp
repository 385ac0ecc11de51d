// The lease table: creating and migrating it (schema.hpp).
#include "backend/sqlite/schema.hpp"

#include "backend/sqlite/connection.hpp"
#include "backend/sqlite/database_files.hpp"
#include "backend/sqlite/history_table.hpp"
#include "core/error.hpp"
#include "sys/clock.hpp"

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>

namespace simba::backend::sqlite {
namespace {

constexpr const char* k_sql_schema =
    "CREATE TABLE IF NOT EXISTS simba_mutex("
    "mutex TEXT PRIMARY KEY, owner_id TEXT NOT NULL, acquired_at INTEGER, "
    "ttl_at INTEGER, transition_at INTEGER, fencing_token INTEGER NOT NULL, "
    "boot_id TEXT, boot_acquired_at INTEGER, boot_ttl_at INTEGER, boot_transition_at INTEGER, "
    "boot_token INTEGER, holding INTEGER, holder TEXT, holder_token INTEGER, history_seq INTEGER, "
    "acquisitions INTEGER, losses INTEGER, lost_token INTEGER) WITHOUT ROWID";

// Added in place to a table made by an older simba (migrate_schema()).
constexpr const char* k_added_columns[] = {"boot_id TEXT",        "boot_acquired_at INTEGER",
                                           "boot_ttl_at INTEGER", "boot_transition_at INTEGER",
                                           "boot_token INTEGER",  "holding INTEGER",
                                           "holder TEXT",         "holder_token INTEGER",
                                           "history_seq INTEGER", "acquisitions INTEGER",
                                           "losses INTEGER",      "lost_token INTEGER"};

// Opening may race with another process creating the database.
constexpr int k_open_busy_timeout_ms = 5000;

void exec_or_throw(Connection& db, const std::string& path, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db.db(), sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : db.errmsg();
    sqlite3_free(err);
    throw UnavailableError("cannot initialize " + path + ": " + msg);
  }
}

// A table made by an older simba gets the boot_, holder, history_seq and
// counter columns, empty (and the history ring, history_table.hpp, with
// the lost event's columns): its rows keep
// being judged on the wall clock (lease_of()) until this simba writes them.
// Older simba processes still running go on with their own columns. Several
// processes may migrate at once: a column another one added meanwhile is
// fine.
void migrate_schema(Connection& db, const std::string& path) {
  exec_or_throw(db, path, "BEGIN IMMEDIATE");
  for (const char* column : k_added_columns) {
    char* err = nullptr;
    std::string sql = std::string("ALTER TABLE simba_mutex ADD COLUMN ") + column;
    if (sqlite3_exec(db.db(), sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : db.errmsg();
      sqlite3_free(err);
      if (msg.find("duplicate column") == std::string::npos) {
        db.rollback_if_open();
        throw UnavailableError("cannot update the schema of " + path + ": " + msg);
      }
    }
  }
  exec_or_throw(db, path, k_sql_create_history);
  if (int rc = add_history_columns(db); rc != SQLITE_OK) {
    std::string msg = db.errmsg();
    db.rollback_if_open();
    throw UnavailableError("cannot update the schema of " + path + ": " + msg);
  }
  exec_or_throw(db, path, "COMMIT");
}

// Switching to WAL needs an exclusive lock. When several processes create the
// database at once, SQLite may report a deadlock as SQLITE_BUSY at once (no
// busy handler) or leave the mode unchanged: retry for a while.
void set_wal_mode(Connection& db, const std::string& path) {
  int64_t deadline = sys::boottime_ms() + k_open_busy_timeout_ms;
  std::mt19937 rng(static_cast<unsigned>(getpid()));
  for (;;) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db.db(), "PRAGMA journal_mode=WAL", -1, &s, nullptr);
    std::string mode;
    if (rc == SQLITE_OK) {
      rc = sqlite3_step(s);
      if (rc == SQLITE_ROW) {
        mode = column_text(s, 0);
        rc = SQLITE_OK;
      }
    }
    std::string msg = db.errmsg();
    sqlite3_finalize(s);
    if (rc == SQLITE_OK && mode == "wal") return;
    if (rc != SQLITE_OK && !is_busy(rc))
      throw UnavailableError("cannot initialize " + path + ": " + msg);
    if (sys::boottime_ms() > deadline)
      throw UnavailableError("cannot initialize " + path + ": database is locked");
    std::this_thread::sleep_for(std::chrono::microseconds(500 + rng() % 2000));
  }
}

// status by a user who may only read the database: the -shm file cannot be
// set up when missing (or in an unwritable directory), and SQLite says
// "readonly". Without a -wal file holding anything, the database file is all
// there is: read it as immutable (no locks, no -shm: a write at that very
// moment may be missed, as by a look a moment earlier).
bool open_immutable(Connection& db, const DatabaseFiles& files) {
  if (files.wal_has_frames()) return false;
  return db.open_immutable(files.path());
}

// What the probe's failure means: a new database (no table: create it) or
// one made by an older simba (no such column: migrate it, once). Anything
// else is thrown.
enum class Probe { new_database, old_schema };

Probe judge_probe_failure(Connection& db, const DatabaseFiles& files, int rc, int attempt) {
  const std::string& path = files.path();
  std::string msg = db.errmsg();
  if ((rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_READONLY ||
      sqlite3_system_errno(db.db()) == EACCES)
    if (std::string denied = files.permission_problem(); !denied.empty())
      throw UnavailableError(denied);
  if (!files.how().create_file && msg.find("no such table") != std::string::npos)
    throw UnavailableError("no simba database at " + path + " (the file has no simba_mutex table)");
  if (attempt == 0 && msg.find("no such column") != std::string::npos) return Probe::old_schema;
  if (attempt > 0 || msg.find("no such table") == std::string::npos)
    throw UnavailableError("cannot open " + path + ": " + msg);
  return Probe::new_database;
}

} // namespace

void ensure_schema(Connection& db, const DatabaseFiles& files) {
  const std::string& path = files.path();
  db.set_busy_timeout(k_open_busy_timeout_ms);
  bool read_only = sqlite3_db_readonly(db.db(), "main") == 1;
  if (read_only && !files.how().read_only_ok) {
    std::string msg = files.permission_problem();
    throw UnavailableError(msg.empty() ? "cannot open " + path + " for writing: read-only" : msg);
  }
  bool immutable = false;
  for (int attempt = 0;; ++attempt) {
    // The select names every column: it fails on a table without them.
    sqlite3_stmt* probe = nullptr;
    int rc =
        sqlite3_prepare_v3(db.db(), k_sql_select, -1, SQLITE_PREPARE_PERSISTENT, &probe, nullptr);
    if (rc == SQLITE_OK) {
      db.keep(k_select, probe);
      db.configure();
      return;
    }
    if ((rc & 0xff) == SQLITE_NOTADB) throw UnavailableError(path + " is not a SQLite database");
    if (read_only && !immutable && (rc & 0xff) == SQLITE_READONLY && open_immutable(db, files)) {
      immutable = true;
      db.set_busy_timeout(k_open_busy_timeout_ms);
      continue;
    }
    if (judge_probe_failure(db, files, rc, attempt) == Probe::old_schema) {
      migrate_schema(db, path);
      continue;
    }
    // A new database. journal_mode is stored in the file, so it is set only
    // here: the pragma costs a noticeable part of a run when repeated.
    set_wal_mode(db, path);
    exec_or_throw(
        db, path,
        (std::string("BEGIN IMMEDIATE; ") + k_sql_schema + "; " + k_sql_create_history + "; COMMIT")
            .c_str());
  }
}

} // namespace simba::backend::sqlite
