// lead's restart policy after a failed run (issue: leadership must move
// away from a failing host): with others waiting, the leader hands the
// mutex over -- the release any end makes, once CMD and all it left are
// gone -- and contends again at the back of the queue; with nobody waiting
// (or no way to tell), CMD restarts under the same lease.
#include "core/contender.hpp"

#include "core/duration.hpp"

#include <algorithm>

namespace simba::core {

// lead: the answer to "who waits?" after a failed run. Others wait: the
// mutex goes to them (a host whose CMD keeps failing must not keep the
// leadership). Nobody, or not known: restart under the same lease.
Actions Contender::on_waiters_reply(int64_t now, const CallResult& r) {
  auto* o = std::get_if<Owner>(&m_state);
  if (!o || o->stage != Phase::owning || o->child_running) return {};
  if (r.status == CallResult::Status::ok && r.waiters && *r.waiters > 0)
    return hand_over(now, *r.waiters, {});
  Actions acts;
  if (r.status != CallResult::Status::ok)
    acts.push_back(action::Log{LogLevel::warning, "cannot tell whether others wait for " +
                                                      m_config.mutex + " (" + r.error +
                                                      "); the command restarts here"});
  return restart_in_place(now, std::move(acts));
}

Actions Contender::restart_in_place(int64_t now, Actions acts) {
  owner().next_start_at = now + m_config.restart_delay_ms;
  acts.push_back(action::Log{LogLevel::info, "restarting the command in " +
                                                 format_duration(m_config.restart_delay_ms)});
  return acts;
}

// CMD and all it left are gone (after_all_gone): the release that any
// end makes, then contending again at the back of the queue.
Actions Contender::hand_over(int64_t now, int others, Actions acts) {
  acts.push_back(action::Log{
      LogLevel::info, std::to_string(others) +
                          (others == 1 ? " other contender waits" : " other contenders wait") +
                          " for " + m_config.mutex + ": handing it over after the failed run"});
  m_state = Releasing{owner().lease.fencing_token, m_child_code, true};
  return call(now, Op::release, std::move(acts));
}

// The hand-over's release was answered (or failed: the lease may still be
// ours, and our next acquire renews it). No acquire of ours for a restart
// delay, and at least one call's time: the waiter the release woke takes
// the mutex first; if it does not, we lead again.
Actions Contender::contend_after_hand_over(int64_t now, const CallResult& r) {
  Actions acts;
  bool released = r.status == CallResult::Status::ok;
  if (!released)
    acts.push_back(action::Log{LogLevel::warning, "could not release " + m_config.mutex + " (" +
                                                      r.error + "); contending again"});
  // A stop during the release: between runs (128+N).
  if (m_stop_signal) return finish(now, 128 + m_stop_signal, std::move(acts));
  int64_t pause = std::max(m_config.restart_delay_ms, m_config.call_timeout_ms);
  Waiting w;
  w.began = now;
  w.maybe_owner = !released;
  w.not_before = now + pause;
  w.try_at = w.not_before;
  m_state = std::move(w);
  acts.push_back(action::Log{LogLevel::info, "contending for " + m_config.mutex +
                                                 " again (first try in " +
                                                 format_duration(pause) + ")"});
  return acts;
}

} // namespace simba::core
