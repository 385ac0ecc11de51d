// The SQLite Backend's reads for status and history, and the holder's lost
// event (backend_class.hpp).
#include "backend/sqlite/backend_class.hpp"

namespace simba::backend::sqlite {

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

// One transaction: `e` into the row's ring, and the row's event count and
// the counters `counts` gives (k_sql_note_lost: those columns alone; the
// lease columns are not written). A mutex without a row (a database that
// never had it, or a new file at the path) gets nothing: there is no count
// to keep it in; nor does an event `counts` declines (nullopt).
Reply SqliteBackend::note_event(const std::string& mutex, HistoryEvent e, int64_t timeout_ms,
                                const std::function<std::optional<NoteCounts>(
                                    const core::Lease& cur, const Row& row)>& counts) {
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
  std::optional<NoteCounts> c = row.exists ? counts(cur, row) : std::nullopt;
  if (!c) {
    m_db.rollback_if_open();
    return r;
  }
  e.at = m_clocks.reply_now();
  e.holder = m_holder_info;
  const int64_t seq = row.history_seq + (m_history_limit > 0 ? 1 : 0);
  sqlite3_stmt* u = m_db.stmt(k_note_lost, k_sql_note_lost);
  if (!u) return fail_and_roll_back(sqlite3_errcode(m_db.db()));
  bind_text(u, 1, mutex);
  sqlite3_bind_int64(u, 2, seq);
  sqlite3_bind_int64(u, 3, c->losses);
  sqlite3_bind_int64(u, 4, static_cast<sqlite3_int64>(c->lost_token));
  rc = sqlite3_step(u);
  sqlite3_reset(u);
  rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
  if (rc == SQLITE_OK && m_history_limit > 0)
    rc = append_history(m_db, mutex, e, seq, m_history_limit);
  if (rc != SQLITE_OK) return fail_and_roll_back(rc);
  return commit_write(r);
}

// The lost event, and the losses and lost_token (history_events.hpp:
// lost_count), whatever the history's limit.
Reply SqliteBackend::record_lost(const std::string& mutex, const std::string& contender,
                                 const LostLease& lost, int64_t timeout_ms) {
  HistoryEvent e;
  e.event = "lost";
  e.owner_id = contender;
  e.token = lost.token;
  e.exit_code = lost.exit_code;
  e.held_ms = lost.held_ms;
  e.reason = lost.reason;
  e.by = lost.by;
  return note_event(mutex, e, timeout_ms, [&](const core::Lease& cur, const Row& row) {
    LostCount c = lost_count(cur, contender, lost.token);
    uint64_t lost_token = c.note ? lost.token : row.lost_token;
    return std::optional<NoteCounts>(
        NoteCounts{row.losses + (c.counts ? 1 : 0), static_cast<int64_t>(lost_token)});
  });
}

// The skipped event alone (the counters as they are); none at all with
// SIMBA_HISTORY_LIMIT=0.
Reply SqliteBackend::record_skipped(const std::string& mutex, const std::string& contender,
                                    const SkippedRun& skipped, int64_t timeout_ms) {
  HistoryEvent e;
  e.event = "skipped";
  e.owner_id = contender;
  e.token = skipped.token;
  e.exit_code = skipped.exit_code;
  e.held_ms = skipped.held_ms;
  e.waited_ms = skipped.waited_ms;
  e.reason = skipped.reason;
  e.by = skipped.by;
  return note_event(mutex, e, timeout_ms, [&](const core::Lease&, const Row& row) {
    if (m_history_limit <= 0) return std::optional<NoteCounts>();
    return std::optional<NoteCounts>(
        NoteCounts{row.losses, static_cast<int64_t>(row.lost_token)});
  });
}

} // namespace simba::backend::sqlite
