// The SQLite backend (sqlite_backend.hpp): each operation is one write
// transaction on the connection; the folder's other units do the rest.
// The class is in backend_class.hpp; its --once-per, --slots and status
// members in backend_once_slots.cpp and backend_status.cpp.
#include "backend/sqlite/sqlite_backend.hpp"

#include "backend/sqlite/backend_class.hpp"

#include <cerrno>
#include <climits>
#include <unistd.h>

namespace simba::backend {
namespace {

std::string absolute_path(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[PATH_MAX];
  if (!getcwd(buf, sizeof buf))
    throw UnavailableError("cannot resolve " + path + ": " + sqlite::errno_text(errno));
  return std::string(buf) + "/" + path;
}

} // namespace

namespace sqlite {



// What the history events of the operation in progress need to know
// (history_events.hpp).
EventContext SqliteBackend::event_context() const {
  EventContext c;
  c.now = m_clocks.now().boot;
  c.boot_to_wall = m_clocks.boot_to_wall();
  c.holder = m_holder_info;
  c.queued_at_ms = m_waiters.queued_at_ms();
  c.forced = m_op == Op::force;
  c.exit_code = m_exit_code;
  return c;
}

// `read`: the row as read in this transaction (nullptr: read here when the
// write makes events, for its event count and counters).
Reply SqliteBackend::write_decision(const std::string& mutex, const Decision& d, bool new_lease,
                                    const core::Lease& cur, const Row* read) {
  Reply r;
  r.observed.now = m_clocks.reply_now();
  r.observed.lease = on_wall_clock(d.lease, m_clocks.boot_to_wall());
  if (!d.write) {
    // Nothing to write: the read-only transaction just ends.
    int rc = m_db.run(k_commit, "COMMIT");
    if (rc != SQLITE_OK) m_db.rollback_if_open();
    r.status = Reply::Status::ok;
    return r;
  }
  // A new lease, or the end of one: the writes with events (and counters).
  const bool eventful = new_lease || (!cur.owner_id.empty() && d.lease.owner_id.empty());
  int rc = SQLITE_OK;
  Row again;
  if (eventful && !read) {
    rc = select_row(m_db, mutex, again);
    read = &again;
  }
  HistoryEvent events[2];
  const int count = m_history_limit > 0 && eventful
                        ? history_events(cur, d.lease, new_lease, event_context(), events)
                        : 0;
  // The row counts its events (the ring's places: history_table.hpp) and
  // keeps its counters, in the same write as the lease.
  RowCounts counts;
  if (eventful) {
    CounterSteps step = counter_steps(cur, d.lease, new_lease, m_op == Op::force, read->lost_token);
    counts = {read->history_seq + count, read->acquisitions + step.acquisitions,
              read->losses + step.losses, read->lost_token};
  }
  const int64_t first_seq = counts.history_seq - count + 1;
  if (rc == SQLITE_OK)
    rc = write_row(m_db, mutex, d.lease, m_clocks.boot_to_wall(),
                   new_lease && !m_holder.empty() ? &m_holder : nullptr,
                   eventful ? &counts : nullptr);
  // The lease first: its errors are the ones to report.
  for (int i = 0; i < count && rc == SQLITE_OK; ++i)
    rc = append_history(m_db, mutex, events[i], first_seq + i, m_history_limit);
  // A slot's row (core/slots.hpp): its marker in the same transaction.
  if (rc == SQLITE_OK && !m_marker_covered && mutex.find('#') != std::string::npos)
    rc = cover_by_marker(m_db, mutex, m_clocks.now(), m_clocks.boot_to_wall());
  if (rc != SQLITE_OK) return fail_and_roll_back(rc);
  r.changed = true;
  return commit_write(r);
}

int SqliteBackend::begin_write(int64_t timeout_ms) {
  m_db.set_busy_timeout(timeout_ms);
  int rc = m_db.run(k_begin, "BEGIN IMMEDIATE");
  if (rc == SQLITE_OK) m_clocks.read(m_db.vfs());
  return rc;
}

Reply SqliteBackend::commit_write(Reply done) {
  int rc = m_db.run(k_commit, "COMMIT");
  if (rc != SQLITE_OK) {
    // COMMIT may fail with the transaction still open (then rolling back
    // makes it certain nothing was applied) or after writing part of it.
    std::string msg = is_busy(rc) ? "database is busy" : m_db.errmsg();
    if (!sqlite3_get_autocommit(m_db.db()) && m_db.run(k_rollback, "ROLLBACK") == SQLITE_OK)
      return Reply::failure(Reply::Status::failed, msg);
    return Reply::failure(Reply::Status::indeterminate, "commit failed: " + msg);
  }
  done.status = Reply::Status::ok;
  return done;
}

std::optional<Reply> SqliteBackend::get_once(const std::string& mutex, int64_t timeout_ms) {
  if (!m_db.db()) return std::nullopt;
  m_db.set_busy_timeout(timeout_ms);
  m_clocks.read(m_db.vfs());
  Row row;
  if (int rc = select_row(m_db, mutex, row); rc != SQLITE_OK) return fail_from_rc(rc);
  if (m_files.replaced()) {
    remember_before_reopen(mutex, lease_of(row, m_clocks.now()));
    return std::nullopt;
  }
  Reply r;
  r.status = Reply::Status::ok;
  r.observed.now = m_clocks.reply_now();
  r.observed.lease = on_wall_clock(lease_of(row, m_clocks.now()), m_clocks.boot_to_wall());
  return r;
}

// Opens the path again (creating directory and file, as a new process does),
// and sets the wake-ups up again there; a failure, when it cannot. Its
// directory too, which existed when we started: not a typo.
std::optional<Reply> SqliteBackend::reopen() {
  m_db.close();
  m_waiters.drop_notify_directory();
  m_files.create_again();
  try {
    open_database();
  } catch (const Error& e) {
    m_db.close();
    return Reply::failure(Reply::Status::failed, "the database " + m_files.path() +
                                                     " was removed or replaced: " + e.what());
  }
  m_waiters.watch_again();
  return std::nullopt;
}

// The lease that was valid in the database before it was replaced: a waiter
// does not take the mutex in the new file before that lease would have
// ended (its owner's CMD may run until then), nor does anyone else whom this
// process serves. Only for others' leases: our own is lost.
void SqliteBackend::remember_before_reopen(const std::string& mutex, const core::Lease& lease) {
  if (!lease.free_at(m_clocks.now().boot))
    m_before_reopen = MutexLease{mutex, lease, {}, {}, {}, {}, {}};
}

bool SqliteBackend::held_before_reopen(const std::string& mutex, const std::string& contender,
                                       int64_t now) {
  if (!m_before_reopen || m_before_reopen->mutex != mutex) return false;
  const core::Lease& l = m_before_reopen->lease;
  if (l.free_at(now)) {
    m_before_reopen.reset();
    return false;
  }
  return l.owner_id != contender;
}

Reply SqliteBackend::fail_from_rc(int rc) {
  if (is_busy(rc)) return Reply::failure(Reply::Status::failed, "database is busy");
  if ((rc & 0xff) == SQLITE_READONLY) // opened read-only for status: release says why
    if (std::string denied = m_files.permission_problem(); !denied.empty())
      return Reply::failure(Reply::Status::failed, denied);
  return Reply::failure(Reply::Status::failed, m_db.errmsg());
}

Reply SqliteBackend::fail_and_roll_back(int rc) {
  Reply f = fail_from_rc(rc);
  m_db.rollback_if_open();
  return f;
}

} // namespace sqlite

std::unique_ptr<Backend> open_sqlite(const std::string& path, const SqliteOpen& how) {
  if (sqlite::boot_id().empty())
    throw UnavailableError("cannot read /proc/sys/kernel/random/boot_id: SQLite leases are "
                           "timed on the boot clock and need it");
  // Messages name the absolute path (resolved once its directory is open).
  auto backend = std::make_unique<sqlite::SqliteBackend>(absolute_path(path), how);
  backend->open_database();
  return backend;
}

} // namespace simba::backend
