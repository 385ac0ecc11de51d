#pragma once
// The SQLite Backend's class, for the files that define its members:
// sqlite_backend.cpp (the lease operations, the write transaction, the
// reopening), backend_once_slots.cpp (--once-per, --slots, schedule's
// mark) and backend_status.cpp (status, history, the lost event). Nothing
// else includes it: open_sqlite() (sqlite_backend.hpp) is the way in.
#include "backend/sqlite/sqlite_backend.hpp"

#include "backend/history.hpp"
#include "backend/holder.hpp"
#include "backend/slot_listing.hpp"
#include "backend/sqlite/clocks.hpp"
#include "backend/sqlite/connection.hpp"
#include "backend/sqlite/database_files.hpp"
#include "backend/sqlite/done_records.hpp"
#include "backend/sqlite/history_events.hpp"
#include "backend/sqlite/history_table.hpp"
#include "backend/sqlite/lease_row.hpp"
#include "backend/sqlite/lease_rules.hpp"
#include "backend/sqlite/schema.hpp"
#include "backend/sqlite/slot_rows.hpp"
#include "backend/sqlite/waiters.hpp"
#include "core/error.hpp"
#include "core/fifo.hpp"
#include "core/slots.hpp"

#include <sqlite3.h>

#include <cerrno>
#include <climits>
#include <functional>
#include <optional>
#include <unistd.h>
#include <utility>

namespace simba::backend::sqlite {

class SqliteBackend final : public Backend {
public:
  SqliteBackend(std::string path, const SqliteOpen& how)
      : m_files(std::move(path), how), m_waiters(*this, m_files, m_db),
        m_history_limit(history_limit()) {}

  // Opens the database at the path: its directory (checked: see trust.hpp;
  // the default location's made when missing), the notification directory
  // (checked, if it exists: before a new database is made beside it), the
  // file (checked; created when allowed), then the connection and the
  // schema. Throws UnavailableError when the database cannot be used.
  void open_database() {
    m_files.open_directory();
    m_waiters.check_notify_directory();
    m_files.open_file();
    if (int rc = m_db.open(m_files.path()); rc != SQLITE_OK) {
      std::string msg = m_files.permission_problem();
      if (msg.empty())
        msg = "cannot open " + m_files.path() + ": " +
              (m_db.db() ? m_db.errmsg() : sqlite3_errstr(rc));
      m_db.close();
      throw UnavailableError(msg);
    }
    ensure_schema(m_db, m_files);
  }

  Reply acquire(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                int64_t transition_ms, int64_t timeout_ms) override {
    bool gated = false;
    Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
      if (cur.free_at(now) && held_before_reopen(mutex, contender, now))
        return Decision{false, m_before_reopen->lease}; // not before it would have ended
      if ((gated = fifo_refuses(mutex, cur, now, true))) return Decision{false, fifo_shown(cur)};
      return decide_acquire(cur, now, contender, ttl_ms, transition_ms, m_clocks.now().wall);
    });
    if (gated) wake_first_waiter(mutex);
    if (r.ok() && !r.changed) prepare_writes();
    return r;
  }

  Reply guard(const std::string& mutex, const std::string& contender, uint64_t token,
              int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    return renew(mutex, contender, token, ttl_ms, transition_ms, false, timeout_ms);
  }

  Reply begin_step(const std::string& mutex, const std::string& contender, uint64_t token,
                   int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
      return decide_begin_step(cur, now, contender, token, ttl_ms, transition_ms);
    });
    m_db.checkpoint_if_due();
    return r;
  }

  Reply hold(const std::string& mutex, const std::string& contender, uint64_t token,
             int64_t hold_ms, int64_t timeout_ms) override {
    return renew(mutex, contender, token, hold_ms, 0, true, timeout_ms);
  }

  Reply extend(const std::string& mutex, const std::string& contender, uint64_t token,
               int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
      return decide_extend(cur, now, contender, token, ttl_ms, transition_ms);
    });
    m_db.checkpoint_if_due();
    return r;
  }

  Reply release(const std::string& mutex, const std::string& contender, uint64_t token,
                int64_t timeout_ms) override {
    m_op = Op::release;
    Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
      return decide_release(cur, now, contender, token);
    });
    m_op = Op::other;
    bool woke = r.changed && wake_first_waiter(mutex);
    m_db.checkpoint_if_due(woke);
    return r;
  }

  Reply end_revoked(const std::string& mutex, const std::string&, uint64_t token,
                    int64_t timeout_ms) override {
    if (mutex.find('#') != std::string::npos) // a slot's row: not here (backend.hpp)
      return Reply::failure(Reply::Status::failed, "a slot's revoked lease runs out");
    Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
      return decide_end_revoked(cur, now, token);
    });
    bool woke = r.changed && wake_first_waiter(mutex);
    m_db.checkpoint_if_due(woke);
    return r;
  }

  Reply force_release(const std::string& mutex, uint64_t token, int64_t timeout_ms) override {
    return end_lease(mutex, token, timeout_ms, false);
  }

  Reply release_lease(const std::string& mutex, uint64_t token, int64_t timeout_ms) override {
    return end_lease(mutex, token, timeout_ms, true);
  }

  // force_release and release_lease: `by_owner` makes a lease only held a
  // release (m_op, set from the row read in the transaction, names the
  // event and decides the loss count).
  Reply end_lease(const std::string& mutex, uint64_t token, int64_t timeout_ms, bool by_owner) {
    m_op = Op::force;
    Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
      m_op = by_owner && cur.holding ? Op::release : Op::force;
      return decide_force_release(cur, now, token);
    });
    m_op = Op::other;
    // A lease that ended wakes the first waiter, as a release does; a
    // revocation tells its owner and every waiter.
    if (r.changed && r.observed.lease.free_at(r.observed.now)) {
      m_db.checkpoint_if_due(wake_first_waiter(mutex));
      return r;
    }
    if (r.changed) notify(mutex);
    m_db.checkpoint_if_due();
    return r;
  }

  bool has_slots() const override { return true; }
  Reply acquire_slot(const std::string& mutex, const std::string& contender, int slots,
                     int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override;

  Reply get(const std::string& mutex, int64_t timeout_ms) override {
    if (std::optional<Reply> r = get_once(mutex, timeout_ms)) return *r;
    if (std::optional<Reply> failed = reopen()) return *failed;
    std::optional<Reply> r = get_once(mutex, timeout_ms);
    if (!r) return replaced_again();
    if (r->ok()) r->error = reopened_note();
    return *r;
  }

  Listing inspect(const std::string& mutex, int64_t timeout_ms) override;
  History history(const std::string& mutex, int64_t since_ms, int64_t timeout_ms) override;
  void set_exit_code(int code) override { m_exit_code = code; }
  Reply record_lost(const std::string& mutex, const std::string& contender, const LostLease& lost,
                    int64_t timeout_ms) override;
  Reply record_skipped(const std::string& mutex, const std::string& contender,
                       const SkippedRun& skipped, int64_t timeout_ms) override;

  void set_holder(const Holder& h) override {
    m_holder_info = h;
    m_holder = encode_holder(h);
    m_waiters.set_holder(m_holder, h.gives_up_at);
  }

  Reply acquire_once(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                     int64_t transition_ms, const core::OncePer& once, const std::string& label,
                     const std::string& host, int64_t timeout_ms) override;
  Reply release_once(const std::string& mutex, const std::string& contender, uint64_t token,
                     int exit_code, int64_t timeout_ms) override;
  Reply done_record(const std::string& mutex, int64_t timeout_ms) override;
  Reply guard_mark(const std::string& mutex, const std::string& contender, uint64_t token,
                   int64_t ttl_ms, int64_t transition_ms, bool record, int64_t timeout_ms) override;

  Wakeups& wakeups(const std::string& mutex, const std::string& contender) override {
    m_waiters.target(mutex, contender);
    return m_waiters;
  }

  std::string describe() const override { return "sqlite://" + m_files.path(); }
  // simba doctor: the file system, the modes, inotify (sqlite_doctor.cpp).
  void diagnose(Diagnosis& found, const DiagnoseOptions& options) override;

  void leave() override { m_db.leave(); }

private:
  // The waiters of a slot row (core/slots.hpp) queue on its mutex.
  bool wake_first_waiter(const std::string& row) {
    size_t hash = row.find('#');
    if (hash == std::string::npos) return m_waiters.wake_first_waiter(row);
    return m_waiters.wake_next_waiter(row.substr(0, hash));
  }
  void notify(const std::string& row) {
    size_t hash = row.find('#');
    if (hash == std::string::npos) return m_waiters.notify(row);
    m_waiters.notify(row.substr(0, hash));
  }

  // FIFO (core/fifo.hpp), inside the acquire's transaction: a lease that
  // ended less than the fallback ago goes to the first live waiter only.
  // Ended: ran out unreleased (an owner left, or a revocation's transition
  // ran out: a release leaves no owner and ends the transition at its own
  // time), or, with `released_too` (acquire), released: a release wakes
  // the first live waiter only, and another's timer that fired first took
  // the mutex ahead of it. (release_once wakes every waiter: the window's
  // run is over, each of them learns it at once.) Only refuses (DESIGN §2:
  // the gate never grants). A new row, or one free for longer, is never
  // gated: such an acquire reads no queue. The refused caller then wakes
  // that waiter (wake_first_waiter): its timer may fire later than ours.
  bool fifo_refuses(const std::string& mutex, const core::Lease& cur, int64_t now,
                    bool released_too) {
    bool timed_end = !cur.owner_id.empty() || cur.ttl_at < cur.transition_at;
    if (!cur.free_at(now) || !(timed_end || released_too) ||
        !core::fifo_gate_due(cur.transition_at, now))
      return false;
    return !core::may_take_freed_lease(m_waiters.live_ahead(mutex, 1, {}), cur.transition_at, now);
  }
  static core::Lease fifo_shown(const core::Lease& cur) {
    return core::fifo_refusal(cur, cur.transition_at);
  }

  // A waiter prepares the statements its acquisition will write with now,
  // not on the hand-over's path once woken (parsing them: ~0.05 ms).
  void prepare_writes() {
    if (!m_db.db()) return;
    m_db.stmt(k_upsert, k_sql_upsert);
    if (m_history_limit > 0) prepare_history(m_db);
  }

  Reply renew(const std::string& mutex, const std::string& contender, uint64_t token,
              int64_t ttl_ms, int64_t transition_ms, bool holding, int64_t timeout_ms) {
    Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
      return decide_renew(cur, now, contender, token, ttl_ms, transition_ms, holding);
    });
    m_db.checkpoint_if_due();
    return r;
  }

  std::optional<Reply> get_once(const std::string& mutex, int64_t timeout_ms);
  std::optional<Reply> prepare_done_table();
  template <typename Decide>
  Reply write_op(const std::string& mutex, int64_t timeout_ms, Decide decide);
  template <typename Decide>
  std::optional<Reply> write_once(const std::string& mutex, int64_t timeout_ms, Decide decide);
  Reply write_decision(const std::string& mutex, const Decision& d, bool new_lease,
                       const core::Lease& cur, const Row* read = nullptr);
  EventContext event_context() const;
  std::optional<Reply> reopen();
  void remember_before_reopen(const std::string& mutex, const core::Lease& lease);
  bool held_before_reopen(const std::string& mutex, const std::string& contender, int64_t now);
  Reply fail_from_rc(int rc);
  Reply fail_and_roll_back(int rc);
  // record_lost's and record_skipped's transaction (backend_status.cpp).
  struct NoteCounts {
    int64_t losses = 0;
    int64_t lost_token = 0;
  };
  Reply note_event(const std::string& mutex, HistoryEvent e, int64_t timeout_ms,
                   const std::function<std::optional<NoteCounts>(const core::Lease& cur,
                                                                 const Row& row)>& counts);
  // The start of a write transaction: BEGIN IMMEDIATE (the write lock
  // waited for up to `timeout_ms`), then the clocks read inside it.
  int begin_write(int64_t timeout_ms);
  // Its end: COMMIT. `done` (the reply as written, status ok) or a
  // failure: failed when nothing was applied, else indeterminate.
  Reply commit_write(Reply done);

  std::string reopened_note() const {
    return "the database " + m_files.path() + " was removed or replaced; opened anew";
  }
  Reply replaced_again() const {
    return Reply::failure(Reply::Status::failed,
                          "the database " + m_files.path() + " was replaced again");
  }

  // Destroyed in reverse: the waiters leave the queue before the connection
  // closes, and both use the files' directory descriptor.
  DatabaseFiles m_files;
  Connection m_db;
  Waiters m_waiters;
  OperationClocks m_clocks;                  // of the operation in progress
  std::optional<MutexLease> m_before_reopen; // see remember_before_reopen()
  bool m_done_table_ready = false;           // --once-per: simba_done exists
  bool m_last_run_table_ready = false;       // schedule: simba_last_run exists
  std::string m_holder;                      // set_holder(), encoded; "" when not set
  std::optional<Holder> m_holder_info;       // set_holder()'s
  int64_t m_history_limit;                   // SIMBA_HISTORY_LIMIT: 0, none written
  enum class Op { other, release, force } m_op = Op::other; // names the history event
  std::optional<int> m_exit_code;                           // set_exit_code(), for a release
  bool m_marker_covered = false; // acquire_slot wrote the marker: write_decision need not
};

// One operation = one BEGIN IMMEDIATE transaction: read the clocks (inside
// it: one writer at a time, so their order is the order of the writes) and
// the lease, let `decide` compute the new lease on the boot clock, write it,
// commit. When the file at the path is no longer the database we have open
// (removed or replaced: DatabaseFiles::replaced()), open the path again and
// run the operation there: an owner's lease is then gone (its guard says so:
// lost), a waiter contends with the processes that use the new file.
template <typename Decide>
Reply SqliteBackend::write_op(const std::string& mutex, int64_t timeout_ms, Decide decide) {
  if (std::optional<Reply> r = write_once(mutex, timeout_ms, decide)) return *r;
  if (std::optional<Reply> failed = reopen()) return *failed;
  std::optional<Reply> r = write_once(mutex, timeout_ms, decide);
  if (!r) return replaced_again();
  if (r->ok()) r->error = reopened_note();
  return *r;
}

// nullopt: the database was replaced (nothing written; see write_op).
template <typename Decide>
std::optional<Reply> SqliteBackend::write_once(const std::string& mutex, int64_t timeout_ms,
                                               Decide decide) {
  if (!m_db.db()) return std::nullopt; // an earlier reopen failed
  int rc = begin_write(timeout_ms);
  if (rc != SQLITE_OK) return fail_and_roll_back(rc);
  Row row;
  rc = select_row(m_db, mutex, row);
  if (rc != SQLITE_OK) return fail_and_roll_back(rc);
  if (m_files.replaced()) {
    m_db.rollback_if_open();
    remember_before_reopen(mutex, lease_of(row, m_clocks.now()));
    return std::nullopt;
  }
  core::Lease cur = lease_of(row, m_clocks.now());
  Decision d = decide(cur, m_clocks.now().boot);
  // A new token with an owner: an acquisition, whose holder is ours.
  bool new_lease = !d.lease.owner_id.empty() && d.lease.fencing_token != cur.fencing_token;
  return write_decision(mutex, d, new_lease, cur, &row);
}

} // namespace simba::backend::sqlite
