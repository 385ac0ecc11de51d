#pragma once
// The SQLite connection of the backend: its settings, a busy handler that
// retries quickly, the statement cache, and the WAL checkpoint policy (the
// WAL hook counts, checkpoint_if_due() checkpoints off the hand-over's path).
#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace simba::backend::sqlite {

// The statements kept prepared for the life of the connection.
enum StmtId {
  k_begin,
  k_commit,
  k_rollback,
  k_select,
  k_upsert,
  k_list,
  k_history_insert,
  k_history_trim,
  k_note_lost,
  k_stmt_count
};

bool is_busy(int rc);

// A text column as a string (empty for NULL).
std::string column_text(sqlite3_stmt* s, int col);

class Connection {
public:
  Connection() = default;
  ~Connection() { close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Opens `path` read-write (never following a link); SQLITE_OK or the
  // error (errmsg() says more; the connection is closed again).
  int open(const std::string& path);
  // Opens `path` read-only as immutable (no locks, no -shm); false on failure.
  bool open_immutable(const std::string& path);
  void close();
  // Forgets the connection without closing it: the process is about to
  // exit, which ends it (its locks, descriptors and memory) sooner than
  // sqlite3_close does (docs/benchmarks.md). With no checkpoint on close and no
  // transaction open, closing would write nothing either.
  void leave() {
    m_db = nullptr;
    for (auto& s : m_stmts) s = nullptr;
  }

  sqlite3* db() const { return m_db; }
  // The connection's VFS: its clock is the wall clock of Clocks.
  sqlite3_vfs* vfs() const { return m_vfs; }
  std::string errmsg() const { return sqlite3_errmsg(m_db); }

  // Every wait for another connection's lock ends `ms` from now.
  void set_busy_timeout(int64_t ms);
  // The settings of a connection to a database with the schema.
  void configure();
  // A checkpoint, when the WAL has grown enough (see connection.cpp).
  void checkpoint_if_due(bool handing_over = false);

  // The prepared statement `id` (prepared from `sql` on first use); null on
  // error.
  sqlite3_stmt* stmt(StmtId id, const char* sql) {
    if (!m_stmts[id])
      sqlite3_prepare_v3(m_db, sql, -1, SQLITE_PREPARE_PERSISTENT, &m_stmts[id], nullptr);
    return m_stmts[id];
  }
  // Keeps `s`, prepared already, as statement `id`.
  void keep(StmtId id, sqlite3_stmt* s) { m_stmts[id] = s; }
  // Runs a statement without result rows to completion.
  int run(StmtId id, const char* sql);
  void rollback_if_open();

private:
  static int busy_handler(void* self, int count);

  sqlite3* m_db = nullptr;
  sqlite3_vfs* m_vfs = nullptr;
  sqlite3_stmt* m_stmts[k_stmt_count] = {};
  int m_wal_pages = 0;         // frames in the WAL after our last commit
  int64_t m_busy_until_ns = 0; // busy_handler gives up then (CLOCK_BOOTTIME)
};

// Binds a copy of `v` (SQLite keeps it past the call) as parameter `i`.
void bind_text(sqlite3_stmt* s, int i, const std::string& v);

} // namespace simba::backend::sqlite
