// The core's calls as backend operations (backend_calls.hpp).
#include "cli/backend_calls.hpp"

#include "cli/options.hpp"
#include "core/error.hpp"
#include "core/slots.hpp"

#include "sys/fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace simba::cli {

core::CallResult to_call_result(const backend::Reply& r) {
  core::CallResult c;
  switch (r.status) {
  case backend::Reply::Status::ok: c.status = core::CallResult::Status::ok; break;
  case backend::Reply::Status::failed: c.status = core::CallResult::Status::failed; break;
  case backend::Reply::Status::indeterminate:
    c.status = core::CallResult::Status::indeterminate;
    break;
  case backend::Reply::Status::refused: c.status = core::CallResult::Status::refused; break;
  }
  c.observed = r.observed;
  c.changed = r.changed;
  c.error = r.error;
  c.done = r.done;
  c.last_run_at = r.last_run_at;
  return c;
}

namespace {

const char* op_name(core::Op op) {
  switch (op) {
  case core::Op::acquire: return "acquire";
  case core::Op::guard: return "renew";
  case core::Op::hold: return "hold";
  case core::Op::release: return "release";
  case core::Op::waiters: return "status";
  }
  return "";
}

} // namespace

core::CallResult BackendCalls::call(const core::action::Call& a, int64_t timeout) {
  core::CallResult r = send(a, timeout);
  // A refusal is the one line simba ends with: who refused what, and why.
  if (r.status == core::CallResult::Status::refused)
    r.error = m_backend.describe() + " refused " + op_name(a.op) + " for " + m_config.mutex + ": " +
              r.error + " (README \"ACL users\")";
  return r;
}

core::CallResult BackendCalls::send(const core::action::Call& a, int64_t timeout) {
  ++m_count;
  if (a.op == core::Op::waiters) return waiters(timeout);
  if (m_config.slots > 1) return call_slot(a, timeout);
  const std::string& mutex = m_config.mutex;
  const std::string& id = m_config.contender_id;
  switch (a.op) {
  case core::Op::acquire:
    if (m_config.once) return acquire_once(a, timeout);
    return plain_acquire_result(m_backend.acquire(mutex, id, a.ttl_ms, a.transition_ms, timeout));
  case core::Op::guard:
    if (a.mark != core::RunMark::none)
      return to_call_result(m_backend.guard_mark(mutex, id, a.token, a.ttl_ms, a.transition_ms,
                                                 a.mark == core::RunMark::record, timeout));
    if (a.step_start)
      return to_call_result(
          m_backend.begin_step(mutex, id, a.token, a.ttl_ms, a.transition_ms, timeout));
    return to_call_result(m_backend.guard(mutex, id, a.token, a.ttl_ms, a.transition_ms, timeout));
  case core::Op::hold: return to_call_result(m_backend.hold(mutex, id, a.token, a.ttl_ms, timeout));
  case core::Op::release:
    if (m_config.once)
      return to_call_result(m_backend.release_once(mutex, id, a.token, a.exit_code, timeout));
    m_backend.set_exit_code(a.exit_code); // for the history (no I/O)
    return to_call_result(m_backend.release(mutex, id, a.token, timeout));
  case core::Op::waiters: break; // above
  }
  return {};
}

// The others in the mutex's queue (one queue for all its slots), read as
// status reads it; not us (a waiter that became the owner keeps its place
// until it settles). Not known: a backend that keeps no queue.
core::CallResult BackendCalls::waiters(int64_t timeout) {
  backend::Listing l = m_backend.inspect(m_config.mutex, timeout);
  core::CallResult c;
  if (!l.ok) {
    c.status = core::CallResult::Status::failed;
    c.error = l.error;
    return c;
  }
  c.status = core::CallResult::Status::ok;
  c.observed.now = l.now;
  if (!l.waiters_kept) return c;
  int others = 0;
  for (const backend::MutexLease& m : l.mutexes) {
    if (m.mutex != m_config.mutex) continue;
    for (const backend::Waiter& w : m.waiters) others += w.owner_id != m_config.contender_id;
  }
  c.waiters = others;
  return c;
}

// --once-per: the done record names the host as well as the label.
// A record of other terms (--once-per, --offset) whose window lasts ends
// simba with 64 (core::terms_differ): the backend took nothing (or ended
// the lease of ours it found, as when the window may not run).
core::CallResult BackendCalls::acquire_once(const core::action::Call& a, int64_t timeout) {
  core::OncePer once = *m_config.once;
  once.window = a.once_window;
  backend::Reply r =
      m_backend.acquire_once(m_config.mutex, m_config.contender_id, a.ttl_ms, a.transition_ms, once,
                             m_config.label, this_host(), timeout);
  if (r.ok() && r.done && core::terms_differ(*r.done, *m_config.once, r.observed.now) &&
      !r.observed.lease.owned_by(m_config.contender_id, r.observed.now))
    throw UsageError(core::terms_differ_message(m_config.mutex, *r.done, *m_config.once));
  return to_call_result(r);
}

namespace {

[[noreturn]] void throw_slots_mismatch(const std::string& mutex, int recorded, int slots) {
  throw UsageError("mutex '" + mutex + "' is held with --slots " + std::to_string(recorded) +
                   ", not " + std::to_string(slots) +
                   " (the next acquirer of the free mutex sets its number)");
}

} // namespace

// A plain acquire's reply (N = 1). One that finds the marker of slots
// (core/slots.hpp) ends simba with 64 as acquire_slot's does: only a reply
// that took nothing is looked at.
core::CallResult BackendCalls::plain_acquire_result(const backend::Reply& r) {
  if (!r.changed && r.ok() && r.observed.lease.valid_at(r.observed.now)) {
    int recorded = core::slots_of_owner(r.observed.lease.owner_id);
    if (recorded > 1) throw_slots_mismatch(m_config.mutex, recorded, 1);
  }
  return to_call_result(r);
}

// A mutex held with another N refuses (exit 64): nothing was taken.
core::CallResult BackendCalls::call_slot(const core::action::Call& a, int64_t timeout) {
  const std::string& mutex = m_config.mutex;
  const std::string& id = m_config.contender_id;
  backend::Reply r;
  switch (a.op) {
  case core::Op::acquire:
    r = m_backend.acquire_slot(mutex, id, m_config.slots, a.ttl_ms, a.transition_ms, timeout);
    if (r.slots_recorded > 0) throw_slots_mismatch(mutex, r.slots_recorded, m_config.slots);
    // An answer says which slot we hold, if any; no answer leaves it as it was.
    if (r.ok()) m_slot = r.observed.lease.owned_by(id, r.observed.now) ? r.observed.lease.slot : -1;
    return to_call_result(r);
  case core::Op::guard:
    if (a.step_start)
      r = m_backend.begin_step(core::slot_row(mutex, std::max(m_slot, 0)), id, a.token, a.ttl_ms,
                               a.transition_ms, timeout);
    else
      r = m_backend.guard(core::slot_row(mutex, std::max(m_slot, 0)), id, a.token, a.ttl_ms,
                          a.transition_ms, timeout);
    break;
  case core::Op::hold:
    r = m_backend.hold(core::slot_row(mutex, std::max(m_slot, 0)), id, a.token, a.ttl_ms, timeout);
    break;
  case core::Op::release:
    m_backend.set_exit_code(a.exit_code);
    r = release_slot(a.token, timeout);
    break;
  case core::Op::waiters: return waiters(timeout);
  }
  r.observed.lease.slot = std::max(m_slot, 0);
  return to_call_result(r);
}

// The slot last acquired; with token 0 (an acquisition whose answer never
// came) or no slot known, each slot (our id holds at most one).
backend::Reply BackendCalls::release_slot(uint64_t token, int64_t timeout) {
  const std::string& id = m_config.contender_id;
  if (m_slot >= 0 && token != 0)
    return m_backend.release(core::slot_row(m_config.mutex, m_slot), id, token, timeout);
  backend::Reply r;
  for (int k = 0; k < m_config.slots && !r.changed; ++k)
    r = m_backend.release(core::slot_row(m_config.mutex, k), id, token, timeout);
  return r;
}

void BackendCalls::disown(const core::action::Disown& a) {
  ++m_count;
  if (m_config.slots > 1) {
    release_slot(a.token, a.timeout_ms);
    return;
  }
  m_backend.release(m_config.mutex, m_config.contender_id, a.token, a.timeout_ms);
}

// A slot's holder lost the lease of its slot's row.
backend::Reply BackendCalls::record_lost(const core::action::RecordLost& a) {
  ++m_count;
  backend::LostLease lost{a.token, core::loss_reason_name(a.reason), a.by, a.exit_code, a.held_ms};
  std::string row = m_config.mutex;
  if (m_config.slots > 1) row = core::slot_row(m_config.mutex, std::max(m_slot, 0));
  return m_backend.record_lost(row, m_config.contender_id, lost, a.timeout_ms);
}

backend::Reply BackendCalls::end_revoked(uint64_t token, int64_t timeout_ms) {
  ++m_count;
  return m_backend.end_revoked(m_config.mutex, m_config.contender_id, token, timeout_ms);
}

backend::Reply BackendCalls::record_skipped(const core::action::RecordSkipped& a) {
  ++m_count;
  backend::SkippedRun s{a.reason, a.by, a.token, a.held_ms, a.waited_ms, a.exit_code};
  return m_backend.record_skipped(m_config.mutex, m_config.contender_id, s, a.timeout_ms);
}

void BackendCalls::report() const {
  const char* path = getenv("SIMBA_CALL_COUNT_FILE");
  if (!path || !*path) return;
  std::string line = std::to_string(getpid()) + " " + std::to_string(m_count) + "\n";
  sys::Fd fd(::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (!fd) return;
  ssize_t ignored = ::write(fd.get(), line.data(), line.size());
  (void)ignored;
}

} // namespace simba::cli
