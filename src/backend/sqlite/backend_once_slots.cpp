// The SQLite Backend's --slots, --once-per and schedule's mark, each in
// one write transaction (write_op, backend_class.hpp).
#include "backend/sqlite/backend_class.hpp"

namespace simba::backend::sqlite {

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

// The judgement and the acquire in one transaction: the window is the
// contender's (OncePer::window), else the one holding the reply's now (the
// backend's clock); the record is written with the new lease's token and
// that window (a late run: its start after the window's end).
Reply SqliteBackend::acquire_once(const std::string& mutex, const std::string& contender,
                                  int64_t ttl_ms, int64_t transition_ms, const core::OncePer& once,
                                  const std::string& label, const std::string& host,
                                  int64_t timeout_ms) {
  if (std::optional<Reply> failed = prepare_done_table()) return *failed;
  std::optional<core::DoneRecord> record;
  int done_rc = SQLITE_OK;
  bool gated = false;
  Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
    done_rc = select_done(m_db, mutex, record);
    if (done_rc != SQLITE_OK) return Decision{false, cur};
    // FIFO on the timed path, as acquire's (backend_class.hpp).
    if ((gated = fifo_refuses(mutex, cur, now, false))) return Decision{false, fifo_shown(cur)};
    int64_t wall_now = m_clocks.reply_now();
    bool start = false;
    Decision d = decide_acquire_once(cur, now, contender, ttl_ms, transition_ms,
                                     m_clocks.now().wall, record, wall_now, once, start);
    if (!start) return d;
    core::DoneRecord started{core::judged_window(wall_now, once), label, host,
                             d.lease.fencing_token, wall_now};
    started.period_ms = once.period_ms;
    started.offset_ms = once.offset_ms;
    done_rc = write_done(m_db, mutex, started);
    if (done_rc != SQLITE_OK) return Decision{false, cur};
    record = started;
    return d;
  });
  if (done_rc != SQLITE_OK) return fail_from_rc(done_rc);
  r.done = record;
  if (gated) wake_first_waiter(mutex);
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

Reply SqliteBackend::done_record(const std::string& mutex, int64_t timeout_ms) {
  Reply r = get(mutex, timeout_ms);
  if (!r.ok()) return r;
  if (int rc = select_done(m_db, mutex, r.done); rc != SQLITE_OK) return fail_from_rc(rc);
  return r;
}

} // namespace simba::backend::sqlite
