// The split-phase lease (simba acquire, run --lease): what the contender does
// differently when the lease outlives simba. acquire waits like run, then
// keeps the lease instead of starting CMD; a step (run --lease) starts as the
// owner of a lease it knows from its handle, confirms it with one guard
// before CMD starts, and keeps it again when CMD is done. "Kept" is the hold
// of --min-hold (backend.hpp: the lease is marked as only held, nothing runs
// under it), for a full ttl + transition: status shows it unguarded, and a
// forced release frees it at once.
#include "core/contender.hpp"

#include "core/error.hpp"

#include <csignal>

namespace simba::core {

Actions Contender::start_step(int64_t now) {
  m_state = Owner{};
  Owner& o = owner();
  o.lease.owner_id = m_config.contender_id;
  o.lease.fencing_token = m_config.lease_token;
  // Only the first guard's budget until its reply tells the real times.
  o.deadline = o.kill_point = now + m_config.call_timeout_ms;
  // Only of a lease marked as only held: no other step runs under it.
  Actions acts = call(now, Op::guard);
  std::get<action::Call>(acts.back()).step_start = true;
  return acts;
}

// The first guard of a step: CMD starts only on a lease that is still ours.
Actions Contender::on_step_confirmed(int64_t now, const CallResult& r, int64_t sent_at) {
  Owner& own = owner();
  if (r.status != CallResult::Status::ok) {
    return finish(now, exit_code::k_unavailable,
                  {action::Log{LogLevel::error, "cannot renew the lease of " + m_config.mutex +
                                                    ": backend unavailable: " + r.error}});
  }
  const Observed& o = r.observed;
  if (!holds_lease(o, m_config.contender_id, own.lease.fencing_token)) {
    return finish(
        now, exit_code::k_lost,
        {action::Log{LogLevel::error, "the lease of " + m_config.mutex + " is no longer held: " +
                                          why_not_held(o, own.lease.fencing_token) +
                                          "; the command was not started"}});
  }
  if (!r.changed) {
    // Not marked as only held: another step of the job runs under the
    // lease (or one ended without keeping it: killed, or its keeping
    // failed). Steps run one after another (docs/recipes.md): this one does not
    // start beside it, and the lease is left as it is, the other step's.
    return finish(now, m_config.conflict_exit_code,
                  {action::Log{LogLevel::error,
                               "another step runs under the lease of " + m_config.mutex +
                                   " (steps under one lease run one after another); the "
                                   "command was not started"}});
  }
  own.adopt(o.lease, owner_times(o, sent_at));
  // Asked to stop while the lease was being confirmed (a cancelled CI job):
  // CMD never starts, and the lease stays the job's, kept as after a step.
  if (m_stop_signal) {
    m_child_code = 128 + m_stop_signal;
    return keep_lease(
        now, {action::Log{LogLevel::info, "stopped before the command started; the lease of " +
                                              m_config.mutex + " is kept"}});
  }
  return start_cmd(now, {action::Log{LogLevel::verbose,
                                     "renewed the lease of " + m_config.mutex + " (fencing token " +
                                         std::to_string(o.lease.fencing_token) + ")"}});
}

// acquire once it owns the mutex, a step once CMD and all it left are gone:
// the lease is kept for a full ttl + transition, marked as only held.
Actions Contender::keep_lease(int64_t now, Actions acts) {
  return hold_for(now, m_config.ttl_ms + m_config.transition_ms, std::move(acts));
}

Actions Contender::on_keep_reply(int64_t now, const CallResult& r, int64_t sent_at) {
  Owner& own = owner();
  if (!own.hold_sent) return keep_lease(now, {}); // a guard's reply; the hold tells
  bool acquire = m_config.mode == ContenderConfig::Mode::acquire;
  int code = acquire ? 0 : m_child_code;
  if (r.status != CallResult::Status::ok) {
    // Still ours until the end of the last renewal; only not marked.
    Actions acts{action::Log{LogLevel::warning, "could not renew the lease of " + m_config.mutex +
                                                    " (" + r.error +
                                                    "); it stays held until its former end"}};
    if (acquire) acts.push_back(action::Leased{own.lease, m_last_backend_now});
    return finish(now, code, std::move(acts));
  }
  const Observed& o = r.observed;
  if (!holds_lease(o, m_config.contender_id, own.lease.fencing_token)) {
    std::string why =
        "the lease of " + m_config.mutex + " was lost: " + why_not_held(o, own.lease.fencing_token);
    if (acquire) return finish(now, exit_code::k_lost, {action::Log{LogLevel::error, why}});
    return finish(now, code, {action::Log{LogLevel::warning, why + " (after the command ended)"}});
  }
  own.adopt(o.lease, owner_times(o, sent_at));
  if (acquire) return finish(now, code, {action::Leased{o.lease, o.now}});
  return finish(now, code);
}

// acquire between its acquire and its hold: a stop signal gives the lease
// back (nobody would get its handle); others are ignored.
Actions Contender::on_split_signal(int64_t now, int signo) {
  if (!is_stop_signal(signo)) return {};
  return release_then_exit(now, 128 + signo);
}

} // namespace simba::core
