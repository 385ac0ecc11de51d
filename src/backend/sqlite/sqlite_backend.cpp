// The SQLite backend (sqlite_backend.hpp): each operation is one write
// transaction on the connection; the folder's other units do the rest.
// Over 400 lines for a reason: the --once-per operations (acquire_once,
// release_once) must run inside write_op's transaction, a private member;
// and inspect shares the connection's clocks and reopening.
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
#include "core/slots.hpp"

#include <sqlite3.h>

#include <cerrno>
#include <climits>
#include <optional>
#include <unistd.h>
#include <utility>

namespace simba::backend {
namespace {

using namespace sqlite;

std::string absolute_path(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[PATH_MAX];
  if (!getcwd(buf, sizeof buf))
    throw UnavailableError("cannot resolve " + path + ": " + errno_text(errno));
  return std::string(buf) + "/" + path;
}

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
    Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
      if (cur.free_at(now) && held_before_reopen(mutex, contender, now))
        return Decision{false, m_before_reopen->lease}; // not before it would have ended
      return decide_acquire(cur, now, contender, ttl_ms, transition_ms, m_clocks.now().wall);
    });
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

  Reply force_release(const std::string& mutex, uint64_t token, int64_t timeout_ms) override {
    m_op = Op::force;
    Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
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

  void set_holder(const Holder& h) override {
    m_holder_info = h;
    m_holder = encode_holder(h);
    m_waiters.set_holder(m_holder);
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

// All rows (`mutex` empty) or one, read at one instant, with each lease's
// holder and counters, and the waiters queued in the notify directory
// (waiters.cpp) (status).
Listing SqliteBackend::inspect(const std::string& mutex, int64_t timeout_ms) {
  Listing out;
  out.holders_kept = out.waiters_kept = true;
  if (!m_db.db() || m_files.replaced()) {
    if (std::optional<Reply> failed = reopen()) {
      out.error = failed->error;
      return out;
    }
  }
  m_db.set_busy_timeout(timeout_ms);
  sqlite3_stmt* one = nullptr; // status --mutex: not kept (one use)
  if (!mutex.empty()) {
    sqlite3_prepare_v2(m_db.db(), k_sql_list_one, -1, &one, nullptr);
    if (one) sqlite3_bind_text(one, 1, mutex.data(), int(mutex.size()), SQLITE_TRANSIENT);
  }
  sqlite3_stmt* s = mutex.empty() ? m_db.stmt(k_list, k_sql_list) : one;
  if (!s) {
    out.error = m_db.errmsg();
    return out;
  }
  m_clocks.read(m_db.vfs());
  out.now = m_clocks.reply_now();
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    MutexLease ml;
    ml.mutex = column_text(s, 0);
    ml.lease = on_wall_clock(lease_of(read_row(s, 1), m_clocks.now()), m_clocks.boot_to_wall());
    ml.holder = decode_holder(read_holder(s, 1, ml.lease.fencing_token));
    read_counters(s, 1, ml.acquisitions.emplace(), ml.losses.emplace());
    out.mutexes.push_back(std::move(ml));
  }
  if (rc != SQLITE_DONE) {
    out.error = fail_from_rc(rc).error;
    out.mutexes.clear();
  }
  if (one)
    sqlite3_finalize(one);
  else
    sqlite3_reset(s);
  if (rc != SQLITE_DONE) return out;
  group_slot_rows(out.mutexes);
  // A mutex never acquired has no row: free, as get() shows it.
  if (!mutex.empty() && out.mutexes.empty()) {
    MutexLease never{mutex, core::Lease{}, {}, {}, {}, {}, {}};
    never.acquisitions = never.losses = 0;
    out.mutexes.push_back(std::move(never));
  }
  auto queues = m_waiters.queues();
  for (MutexLease& ml : out.mutexes)
    if (auto q = queues.find(Waiters::queue_key(ml.mutex)); q != queues.end())
      ml.waiters = std::move(q->second);
  out.ok = true;
  return out;
}

// --slots N (backend.hpp): the marker and the slots read, a slot picked,
// the marker written (its N and the top token) and the slot's lease by
// write_decision, which moves the marker over it, in one transaction.
Reply SqliteBackend::acquire_slot(const std::string& mutex, const std::string& contender, int slots,
                                  int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) {
  if (slots == 1) return acquire(mutex, contender, ttl_ms, transition_ms, timeout_ms);
  if (!m_db.db() || m_files.replaced()) {
    if (std::optional<Reply> failed = reopen()) return *failed;
  }
  int rc = begin_write(timeout_ms);
  if (rc != SQLITE_OK) return fail_and_roll_back(rc);
  const int64_t now = m_clocks.now().boot;
  core::Lease marker;
  std::vector<core::Lease> lease;
  rc = read_slots(m_db, mutex, slots, m_clocks.now(), marker, lease);
  if (rc != SQLITE_OK) return fail_and_roll_back(rc);
  int recorded = marker.free_at(now) ? 0 : core::slots_of_owner(marker.owner_id);
  bool agreed = recorded == 0 || recorded == slots;
  // A revoked marker (not free, no owner) no longer says N: wait until it is free.
  bool revoked = marker.revoked_at(now);
  int pick = agreed && !revoked ? pick_slot(lease, contender, now) : -1;
  if (pick < 0) { // refused, or every slot held: nothing written
    const core::Lease& shown = agreed && !revoked ? lease[size_t(soonest_free(lease))] : marker;
    Reply r = write_decision(mutex, Decision{false, shown}, false, marker);
    if (!agreed) r.slots_recorded = recorded;
    return r;
  }
  // A free slot: first come the live waiters queued before us (FIFO).
  if (!lease[size_t(pick)].owned_by(contender, now)) {
    FreeSlots f = free_slots(lease, now);
    std::vector<std::string> holders;
    for (const core::Lease& l : lease)
      if (l.valid_at(now)) holders.push_back(l.owner_id);
    int ahead = m_waiters.live_ahead(mutex, f.count, holders);
    if (!core::may_take_free_slot(ahead, f.count, f.since, now))
      return write_decision(mutex, Decision{false, queued_behind(lease, f, marker, now)}, false,
                            marker);
  }
  const core::Lease& cur = lease[size_t(pick)];
  core::Lease from = cur; // a new lease: a token above every slot's and the marker's
  if (!cur.owned_by(contender, now)) {
    from.fencing_token = marker.fencing_token;
    for (const core::Lease& l : lease)
      from.fencing_token = std::max(from.fencing_token, l.fencing_token);
  }
  Decision d = decide_acquire(from, now, contender, ttl_ms, transition_ms, m_clocks.now().wall);
  bool new_lease = d.lease.fencing_token != cur.fencing_token;
  if (recorded == 0) marker.acquired_at = now;
  marker.owner_id = core::slot_marker(slots);
  marker.fencing_token = std::max(marker.fencing_token, d.lease.fencing_token);
  // Over the slots as they will be (the one taken or renewed: d's), here
  // rather than by write_decision's re-read.
  core::Lease taken = lease[size_t(pick)];
  if (d.write) lease[size_t(pick)] = d.lease;
  cover(marker, lease, now);
  lease[size_t(pick)] = taken;
  rc = write_row(m_db, mutex, marker, m_clocks.boot_to_wall(), nullptr);
  if (rc != SQLITE_OK) return fail_and_roll_back(rc);
  m_marker_covered = true;
  Reply r = write_decision(core::slot_row(mutex, pick), d, new_lease, cur);
  m_marker_covered = false;
  r.observed.lease.slot = pick;
  if (r.changed && new_lease) m_waiters.leave_with_slot();
  return r;
}

// --once-per: the table of done records, made on first use (not by
// ensure_schema: a plain run never needs it).
std::optional<Reply> SqliteBackend::prepare_done_table() {
  if (m_done_table_ready || !m_db.db()) return std::nullopt;
  if (int rc = ensure_done_table(m_db); rc != SQLITE_OK) return fail_from_rc(rc);
  m_done_table_ready = true;
  return std::nullopt;
}

// The judgement and the acquire in one transaction: the window is the one
// holding the reply's now (the backend's clock), the record is written
// with the new lease's token.
Reply SqliteBackend::acquire_once(const std::string& mutex, const std::string& contender,
                                  int64_t ttl_ms, int64_t transition_ms, const core::OncePer& once,
                                  const std::string& label, const std::string& host,
                                  int64_t timeout_ms) {
  if (std::optional<Reply> failed = prepare_done_table()) return *failed;
  std::optional<core::DoneRecord> record;
  int done_rc = SQLITE_OK;
  Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
    done_rc = select_done(m_db, mutex, record);
    if (done_rc != SQLITE_OK) return Decision{false, cur};
    int64_t wall_now = m_clocks.reply_now();
    bool start = false;
    Decision d = decide_acquire_once(cur, now, contender, ttl_ms, transition_ms,
                                     m_clocks.now().wall, record, wall_now, once, start);
    if (!start) return d;
    core::DoneRecord started{core::window_start(wall_now, once), label, host, d.lease.fencing_token,
                             wall_now};
    started.period_ms = once.period_ms;
    started.offset_ms = once.offset_ms;
    done_rc = write_done(m_db, mutex, started);
    if (done_rc != SQLITE_OK) return Decision{false, cur};
    record = started;
    return d;
  });
  if (done_rc != SQLITE_OK) return fail_from_rc(done_rc);
  r.done = record;
  // A lease of ours ended because its window may not run: the others look
  // (as after release_once; Redis's acquire_once notifies too).
  if (r.changed && !r.observed.lease.valid_at(r.observed.now)) m_waiters.notify(mutex);
  return r;
}

// The release and the record's end in one transaction: only the record of
// the lease that ends (its token) is finished.
Reply SqliteBackend::release_once(const std::string& mutex, const std::string& contender,
                                  uint64_t token, int exit_code, int64_t timeout_ms) {
  if (std::optional<Reply> failed = prepare_done_table()) return *failed;
  std::optional<core::DoneRecord> record;
  int done_rc = SQLITE_OK;
  m_exit_code = exit_code;
  Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
    Decision d = decide_release(cur, now, contender, token);
    if (!d.write) return d;
    done_rc = select_done(m_db, mutex, record);
    if (done_rc == SQLITE_OK && record && record->token == cur.fencing_token) {
      record->finished = true;
      record->exit_code = exit_code;
      record->finished_at = m_clocks.reply_now();
      done_rc = write_done(m_db, mutex, *record);
    }
    return done_rc == SQLITE_OK ? d : Decision{false, cur};
  });
  if (done_rc != SQLITE_OK) return fail_from_rc(done_rc);
  r.done = record;
  // Every waiter looks: each must learn from its own acquire_once that the
  // window is done (waking only the first would leave the others to their
  // timers).
  if (r.changed) m_waiters.notify(mutex);
  m_db.checkpoint_if_due();
  return r;
}

// The guard and the last run's start in one transaction.
Reply SqliteBackend::guard_mark(const std::string& mutex, const std::string& contender,
                                uint64_t token, int64_t ttl_ms, int64_t transition_ms, bool record,
                                int64_t timeout_ms) {
  if (!m_last_run_table_ready && m_db.db()) {
    if (int rc = ensure_last_run_table(m_db); rc != SQLITE_OK) return fail_from_rc(rc);
    m_last_run_table_ready = true;
  }
  std::optional<int64_t> last;
  int run_rc = SQLITE_OK;
  Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
    Decision d = decide_renew(cur, now, contender, token, ttl_ms, transition_ms, false);
    if (!d.write) return d;
    run_rc = select_last_run(m_db, mutex, last);
    if (run_rc == SQLITE_OK && record) run_rc = write_last_run(m_db, mutex, m_clocks.reply_now());
    return run_rc == SQLITE_OK ? d : Decision{false, cur};
  });
  if (run_rc != SQLITE_OK) return fail_from_rc(run_rc);
  r.last_run_at = last;
  m_db.checkpoint_if_due();
  return r;
}

History SqliteBackend::history(const std::string& mutex, int64_t since_ms, int64_t timeout_ms) {
  History h;
  h.kept = true;
  if (!m_db.db() || m_files.replaced()) {
    if (std::optional<Reply> failed = reopen()) {
      h.error = failed->error;
      return h;
    }
  }
  m_db.set_busy_timeout(timeout_ms);
  m_clocks.read(m_db.vfs());
  h.now = m_clocks.reply_now();
  if (int rc = read_history(m_db, mutex, since_ms, h.events); rc != SQLITE_OK) {
    h.error = fail_from_rc(rc).error;
    h.events.clear();
    return h;
  }
  h.ok = true;
  return h;
}

// One transaction: the lost event into the row's ring, and the row's
// event count, losses and lost_token (history_events.hpp: lost_count) by
// an UPDATE of those columns alone; the lease columns are not written. A
// mutex without a row (a database that never had it, or a new file at the
// path) gets nothing: there is no count to keep it in.
Reply SqliteBackend::record_lost(const std::string& mutex, const std::string& contender,
                                 const LostLease& lost, int64_t timeout_ms) {
  if (!m_db.db() || m_files.replaced())
    return Reply::failure(Reply::Status::failed,
                          "the database " + m_files.path() + " was removed or replaced");
  int rc = begin_write(timeout_ms);
  if (rc != SQLITE_OK) return fail_and_roll_back(rc);
  Row row;
  rc = select_row(m_db, mutex, row);
  if (rc != SQLITE_OK) return fail_and_roll_back(rc);
  const core::Lease cur = lease_of(row, m_clocks.now());
  Reply r;
  r.status = Reply::Status::ok;
  r.observed.now = m_clocks.reply_now();
  r.observed.lease = on_wall_clock(cur, m_clocks.boot_to_wall());
  if (!row.exists) {
    m_db.rollback_if_open();
    return r;
  }
  LostCount c = lost_count(cur, contender, lost.token);
  HistoryEvent e;
  e.event = "lost";
  e.at = m_clocks.reply_now();
  e.owner_id = contender;
  e.holder = m_holder_info;
  e.token = lost.token;
  e.exit_code = lost.exit_code;
  e.held_ms = lost.held_ms;
  e.reason = lost.reason;
  e.by = lost.by;
  const int64_t seq = row.history_seq + (m_history_limit > 0 ? 1 : 0);
  sqlite3_stmt* u = m_db.stmt(k_note_lost, k_sql_note_lost);
  if (!u) return fail_and_roll_back(sqlite3_errcode(m_db.db()));
  bind_text(u, 1, mutex);
  sqlite3_bind_int64(u, 2, seq);
  sqlite3_bind_int64(u, 3, row.losses + (c.counts ? 1 : 0));
  sqlite3_bind_int64(u, 4, static_cast<sqlite3_int64>(c.note ? lost.token : row.lost_token));
  rc = sqlite3_step(u);
  sqlite3_reset(u);
  rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
  if (rc == SQLITE_OK && m_history_limit > 0)
    rc = append_history(m_db, mutex, e, seq, m_history_limit);
  if (rc != SQLITE_OK) return fail_and_roll_back(rc);
  return commit_write(r);
}

Reply SqliteBackend::done_record(const std::string& mutex, int64_t timeout_ms) {
  Reply r = get(mutex, timeout_ms);
  if (!r.ok()) return r;
  if (int rc = select_done(m_db, mutex, r.done); rc != SQLITE_OK) return fail_from_rc(rc);
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

} // namespace

std::unique_ptr<Backend> open_sqlite(const std::string& path, const SqliteOpen& how) {
  if (sqlite::boot_id().empty())
    throw UnavailableError("cannot read /proc/sys/kernel/random/boot_id: SQLite leases are "
                           "timed on the boot clock and need it");
  // Messages name the absolute path (resolved once its directory is open).
  auto backend = std::make_unique<SqliteBackend>(absolute_path(path), how);
  backend->open_database();
  return backend;
}

} // namespace simba::backend
