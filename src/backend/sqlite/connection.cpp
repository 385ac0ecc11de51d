// The SQLite connection: settings, busy handler, statements, checkpoints
// (connection.hpp).
#include "backend/sqlite/connection.hpp"

#include "backend/sqlite/sqlite_backend.hpp"
#include "sys/clock.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace simba::backend::sqlite {
namespace {

// A checkpoint is due after this many WAL frames (checkpoint_if_due()). The
// WAL is not checkpointed on close, so nearly every simba run, the first
// connection to open the database, reads back every frame written since the
// last checkpoint to rebuild the WAL index, and a checkpoint costs two
// fsyncs, and the next write, which starts the WAL over, a third (its
// header): a few dozen runs between checkpoints balance the two best in
// scripts/bench (docs/benchmarks.md). A run writes 4 frames (the table is
// WITHOUT ROWID: the lease row's page and the history ring's leaf, in each
// of two commits; 2 with SIMBA_HISTORY_LIMIT=0).
constexpr int k_checkpoint_pages = 64;
// A release that handed over checkpoints (passively) only past this.
constexpr int k_checkpoint_overdue_pages = 4 * k_checkpoint_pages;

// Process-wide settings, before SQLite initializes itself. A simba run opens
// one connection, runs a handful of statements and exits, so memory SQLite
// sets up in advance is touched once and wasted, a page fault per page: no
// lookaside (100 slots carved and linked at open), no bulk page-cache
// allocation, no memory statistics (a mutex and counters on every
// allocation).
void configure_sqlite() {
  static bool done = false;
  if (done) return;
  done = true;
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  sqlite3_config(SQLITE_CONFIG_LOOKASIDE, 0, 0);
  sqlite3_config(SQLITE_CONFIG_PAGECACHE, static_cast<void*>(nullptr), 0, 0);
  if (const char* shift = std::getenv("SIMBA_TEST_WALL_CLOCK_SHIFT_MS"))
    testing::shift_sqlite_wall_clock(std::strtoll(shift, nullptr, 10));
}

} // namespace

bool is_busy(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

std::string column_text(sqlite3_stmt* s, int col) {
  const unsigned char* t = sqlite3_column_text(s, col);
  return t ? std::string(reinterpret_cast<const char*>(t),
                         static_cast<size_t>(sqlite3_column_bytes(s, col)))
           : std::string();
}

int Connection::open(const std::string& path) {
  configure_sqlite();
  int rc =
      sqlite3_open_v2(path.c_str(), &m_db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, nullptr);
  if (rc != SQLITE_OK) return rc; // the caller asks errmsg(), then closes
  sqlite3_file_control(m_db, "main", SQLITE_FCNTL_VFS_POINTER, &m_vfs);
  if (!m_vfs) m_vfs = sqlite3_vfs_find(nullptr);
  // A checkpoint on close would put two fsyncs on every run's exit;
  // checkpoint_if_due() bounds the WAL instead.
  sqlite3_db_config(m_db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  return SQLITE_OK;
}

bool Connection::open_immutable(const std::string& path) {
  close();
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x21 || c > 0x7e) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      uri += hex;
    } else {
      uri += static_cast<char>(c);
    }
  }
  uri += "?immutable=1";
  int rc = sqlite3_open_v2(
      uri.c_str(), &m_db,
      SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, nullptr);
  if (rc != SQLITE_OK) {
    close();
    return false;
  }
  sqlite3_file_control(m_db, "main", SQLITE_FCNTL_VFS_POINTER, &m_vfs);
  if (!m_vfs) m_vfs = sqlite3_vfs_find(nullptr);
  return true;
}

void Connection::close() {
  for (auto& s : m_stmts) {
    sqlite3_finalize(s);
    s = nullptr;
  }
  sqlite3_close_v2(m_db);
  m_db = nullptr;
}

// synchronous=NORMAL: in WAL mode a commit does not fsync; a power loss may
// lose the last commits but never corrupts the file. Token safety: see
// next_token() (lease_rules.hpp).
//
// The WAL hook replaces SQLite's automatic checkpoint (wal_autocheckpoint
// installs a WAL hook of its own), which would run inside whichever commit
// crosses its limit and wait for two fsyncs (from a millisecond to over
// ten): inside a release or an acquire that is the hand-over's path, and
// right after a release that woke the next owner its fsyncs would hold up
// that owner's commit. So commits only count the WAL's frames, and
// checkpoint_if_due() runs where no hand-over waits: in an owner's upkeep()
// (CMD started a few milliseconds ago), after a renewal's commit, in a
// release that woke nobody. A release that handed over leaves it to the next
// owner's upkeep, unless CMDs are so short that the WAL reached
// k_checkpoint_overdue_pages (then a passive one, as it has to be).
void Connection::configure() {
  sqlite3_exec(m_db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
  sqlite3_wal_hook(
      m_db,
      [](void* self, sqlite3*, const char*, int pages) {
        static_cast<Connection*>(self)->m_wal_pages = pages;
        return SQLITE_OK;
      },
      this);
}

// TRUNCATE: with no other connection (a run after a run) the WAL ends up
// empty, so the next process has nothing to read back. Without it, the next
// process, the first to attach, rebuilds the WAL index from the WAL file,
// forgets what was checkpointed, and the WAL grows for ever. With the busy
// handler off it never waits: another connection at work (the next owner's
// acquire) makes it a passive checkpoint, and that connection keeps the WAL
// index, which lets the next writer start the WAL over. After a hand-over (a
// waiter was woken) only a passive one: TRUNCATE takes the write lock for a
// moment, which the new owner's acquire would find taken. The new owner's
// connection keeps the index meanwhile.
void Connection::checkpoint_if_due(bool handing_over) {
  if (m_wal_pages < (handing_over ? k_checkpoint_overdue_pages : k_checkpoint_pages)) return;
  m_wal_pages = 0; // the next commit counts again
  set_busy_timeout(0);
  sqlite3_wal_checkpoint_v2(m_db, nullptr,
                            handing_over ? SQLITE_CHECKPOINT_PASSIVE : SQLITE_CHECKPOINT_TRUNCATE,
                            nullptr, nullptr);
}

// SQLite's own busy handler sleeps 1, 2, 5, 10... ms between tries: one
// collision with another process's transaction (a tenth of a millisecond)
// would cost a millisecond or more, on a hand-over's path too. This one
// tries again after 50 us, doubling up to 2 ms, until `ms` have passed on
// the boot clock (a suspend in the middle does not stretch the budget).
void Connection::set_busy_timeout(int64_t ms) {
  m_busy_until_ns = sys::boottime_ns() + std::max<int64_t>(ms, 0) * 1000000;
  sqlite3_busy_handler(m_db, &busy_handler, this);
}

int Connection::busy_handler(void* self, int count) {
  auto* c = static_cast<Connection*>(self);
  int64_t left = c->m_busy_until_ns - sys::boottime_ns();
  if (left <= 0) return 0;
  int64_t pause = std::min<int64_t>(int64_t(50000) << std::min(count, 6), 2000000);
  pause = std::min(pause, left);
  timespec ts{0, long(pause)};
  nanosleep(&ts, nullptr);
  return 1;
}

int Connection::run(StmtId id, const char* sql) {
  sqlite3_stmt* s = stmt(id, sql);
  if (!s) return sqlite3_errcode(m_db);
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

void Connection::rollback_if_open() {
  if (!sqlite3_get_autocommit(m_db)) run(k_rollback, "ROLLBACK");
}

void bind_text(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

} // namespace simba::backend::sqlite
