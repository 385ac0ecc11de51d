// The contender's entries and what all phases share: the calls, the release
// and the exit. The waiter's side is in contender_waiting.cpp, the owner's in
// contender_owning.cpp.
#include "core/contender.hpp"

#include <algorithm>
#include <csignal>

namespace simba::core {

bool is_stop_signal(int signo) {
  return signo == SIGTERM || signo == SIGINT || signo == SIGHUP || signo == SIGQUIT;
}

namespace {

// simba is failing: it does not wait long on the backend.
constexpr int64_t k_emergency_release_timeout_ms = 1000;

} // namespace

Contender::Contender(ContenderConfig config, ContendPeriod period)
    : m_config(std::move(config)), m_period(std::move(period)) {}

Contender::Phase Contender::phase() const {
  if (std::holds_alternative<Waiting>(m_state)) return Phase::contending;
  if (const auto* o = std::get_if<Owner>(&m_state)) return o->stage;
  if (std::holds_alternative<Releasing>(m_state)) return Phase::releasing;
  if (std::holds_alternative<Done>(m_state)) return Phase::done;
  return Phase::init;
}

int64_t Contender::deadline() const {
  const auto* o = std::get_if<Owner>(&m_state);
  return o ? o->deadline : 0;
}

OwnerTimes Contender::owner_times(const Observed& o, int64_t sent_at) const {
  return m_period.owner_times(
      o, sent_at,
      {m_config.ttl_ms, m_config.transition_ms, m_config.kill_after_ms, m_config.retry_ms});
}

Actions Contender::start(int64_t now) {
  if (m_config.mode == ContenderConfig::Mode::step) return start_step(now);
  m_state = Waiting{};
  waiting().began = now;
  if (m_config.wait_timeout_ms) m_give_up_at = now + *m_config.wait_timeout_ms;
  return call(now, Op::acquire);
}

int64_t Contender::call_budget(int64_t now) const {
  int64_t budget = m_config.call_timeout_ms;
  Phase p = phase();
  if (p == Phase::owning || p == Phase::draining) {
    budget = std::min(budget, owner().kill_point - now); // never runs past the kill point
  } else if (p == Phase::contending && m_give_up_at) {
    budget = std::min(budget, *m_give_up_at - now);
  }
  return std::max<int64_t>(budget, 1);
}

Actions Contender::call(int64_t now, Op op, Actions acts) {
  return call_with(now, op, m_config.ttl_ms, m_config.transition_ms, std::move(acts));
}

// acquire: contending; guard, hold: owning or draining; release: releasing.
Actions Contender::call_with(int64_t now, Op op, int64_t ttl, int64_t transition, Actions acts) {
  m_in_flight = InFlight{op, now};
  action::Call a;
  a.op = op;
  a.timeout_ms = call_budget(now);
  a.ttl_ms = ttl;
  a.transition_ms = transition;
  if (op == Op::acquire) waiting().try_at.reset();
  if (op == Op::guard) owner().guard_at.reset();
  if (op == Op::guard || op == Op::hold) a.token = owner().lease.fencing_token;
  if (op == Op::guard && m_config.mode == ContenderConfig::Mode::schedule) {
    const Owner& o = owner();
    a.mark = o.phase_pending ? RunMark::read : o.run_pending ? RunMark::record : RunMark::none;
    m_in_flight->mark = a.mark;
  }
  if (op == Op::acquire) a.once_window = m_once_window;
  if (op == Op::release) {
    a.token = std::get<Releasing>(m_state).token;
    a.exit_code = std::get<Releasing>(m_state).exit_code;
  }
  acts.push_back(a);
  return acts;
}

Actions Contender::on_reply(int64_t now, const CallResult& r) {
  if (!m_in_flight) return {};
  InFlight sent = *m_in_flight;
  m_in_flight.reset();
  // (Op::waiters reads status's listing: its clock is not the leases'.)
  if (r.status == CallResult::Status::ok && sent.op != Op::waiters) {
    m_last_backend_now = r.observed.now;
    m_last_reply_at = now;
    // --once-per: the window in which we first reached the backend stays
    // ours however long we wait (README "Once per window").
    if (m_config.once && m_once_window == 0)
      m_once_window = window_start(r.observed.now, *m_config.once);
  }
  if (phase() == Phase::releasing && sent.op != Op::release) {
    return call(now, Op::release); // the release waited for this reply
  }
  switch (sent.op) {
  case Op::acquire: return on_acquire_reply(now, r, sent.sent_at);
  case Op::guard:
  case Op::hold: return on_guard_reply(now, r, sent.sent_at, sent.mark);
  case Op::release: return on_release_reply(now, r);
  case Op::waiters: return on_waiters_reply(now, r);
  }
  return {};
}

std::optional<OncePer> Contender::once_judged() const {
  std::optional<OncePer> o = m_config.once;
  if (o) o->window = m_once_window;
  return o;
}

Actions Contender::on_release_reply(int64_t now, const CallResult& r) {
  const auto* releasing = std::get_if<Releasing>(&m_state);
  if (!releasing) return {};
  if (releasing->hand_over) return contend_after_hand_over(now, r);
  int code = releasing->exit_code;
  if (r.status == CallResult::Status::ok) {
    Actions acts;
    // Not when the lost event already asked for the revoked lease's end; a
    // loss of another kind (unrenewed, a lead stopped by a signal) that the
    // release finds revoked ends it here (CMD is gone: after_loss).
    auto end =
        releasing->lost_ends_revoked ? std::nullopt : revoked_after_cmd(r, releasing->token);
    if (end) {
      // The force may also have come just before CMD's end, before simba saw
      // it: either way it was found at the release, with nothing running.
      acts.push_back(action::Log{LogLevel::warning,
                                 m_config.mutex +
                                     " was revoked (release --force) before simba released it; "
                                     "the command had ended, and the lease ends now"});
      acts.push_back(*end);
    }
    return finish(now, code, std::move(acts));
  }
  // Refused (an ACL without the release script's commands): CMD's code stays.
  if (r.status == CallResult::Status::refused)
    return finish(now, code,
                  {action::Log{LogLevel::warning, r.error + "; the lease expires by itself"}});
  // A release with token 0 follows only an acquire whose answer never
  // came: whether we hold anything is unknown (most likely not), and a
  // warning about "releasing" would say we held the lock.
  if (releasing->token == 0) {
    return finish(now, code,
                  {action::Log{LogLevel::verbose,
                               "could not make sure that no lease of ours is left on " +
                                   m_config.mutex + " (" + r.error +
                                   "); a lease our unanswered acquire may have taken expires "
                                   "by itself"}});
  }
  return finish(now, code,
                {action::Log{LogLevel::warning, "could not release " + m_config.mutex + " (" +
                                                    r.error + "); it expires by itself"}});
}

Actions Contender::on_timer(int64_t now) {
  switch (phase()) {
  case Phase::contending: {
    if (m_give_up_at && now >= *m_give_up_at) return give_up(now);
    const std::optional<int64_t>& try_at = waiting().try_at;
    if (try_at && now >= *try_at && !m_in_flight) return call(now, Op::acquire);
    return {};
  }
  case Phase::owning:
  case Phase::draining:
  case Phase::stopping: return on_owner_timer(now);
  default: return {};
  }
}

std::optional<int64_t> Contender::wake_at() const {
  std::optional<int64_t> at;
  auto take = [&](std::optional<int64_t> t) {
    if (t && (!at || *t < *at)) at = t;
  };
  if (const auto* w = std::get_if<Waiting>(&m_state)) {
    if (!m_in_flight) take(w->try_at);
    take(m_give_up_at);
  } else if (const auto* o = std::get_if<Owner>(&m_state)) {
    if (o->stage != Phase::stopping) {
      if (!m_in_flight) take(o->guard_at);
      if (!m_in_flight) take(o->look_at);
      take(o->kill_point);
      take(o->next_start_at);
    }
    take(o->kill_at);
  }
  return at;
}

Actions Contender::on_notify(int64_t now) {
  // The call in flight answers for the wake-up: the driver makes one call
  // at a time and reads wake-ups only between calls, so a call in flight
  // here is one it deferred until after this poll (driver.cpp: feed),
  // sent once the wake-up was read: its reply shows what woke us.
  if (m_in_flight) return {};
  if (const auto* w = std::get_if<Waiting>(&m_state)) {
    // While the backend fails, a wake-up does not cut the back-off short: a
    // notification channel that keeps firing must not make a loop of it.
    if (w->failures.count > 0) return {};
    // Just handed over: the waiter the release woke takes it first.
    if (now < w->not_before) return {};
    return call(now, Op::acquire);
  }
  // While we own the mutex only a forced release notifies: check at once.
  if (phase() == Phase::owning) return call(now, Op::guard);
  return {};
}

Actions Contender::on_grant(int64_t now, const CallResult& r, int64_t sent_at) {
  bool can_take = phase() == Phase::contending && !m_in_flight && !waiting().cancel_code;
  bool ours = acquired_by(r, m_config.contender_id) && sent_at <= now;
  if (!can_take || !ours) {
    if (phase() == Phase::owning || m_in_flight) return {};
    // A late grant of the very lease we hold (our own acquire took it
    // first, as a renewal): giving it back would end our lease while CMD,
    // or what it left behind, may still run (draining, stopping). Our own
    // release ends it once all of it is gone.
    if (const auto* o = std::get_if<Owner>(&m_state);
        o && o->lease.fencing_token == r.observed.lease.fencing_token)
      return {};
    return {action::Disown{r.observed.lease.fencing_token, m_config.call_timeout_ms}};
  }
  waiting().try_at.reset();
  m_last_backend_now = r.observed.now;
  m_last_reply_at = now;
  // --once-per: a grant (a plain release handed the mutex over) was not
  // judged against the done record; our acquire_once judges it (and gives
  // the lease back if the window is closed).
  if (m_config.once) {
    waiting().maybe_owner = true;
    return call(now, Op::acquire);
  }
  // Counted from `sent_at`, the lease of a waiter that waited long is short
  // already: with less than half a ttl left before its kill point, CMD
  // would start with its first guard racing that point. Renew first (our
  // acquire is a renewal now), as after a reply that came too late.
  if (owner_times(r.observed, sent_at).kill_point - now < m_config.ttl_ms / 2) {
    waiting().maybe_owner = true;
    return call(now, Op::acquire,
                {action::Log{LogLevel::verbose,
                             "handed " + m_config.mutex + " long after queueing; renewing first"}});
  }
  return on_acquire_reply(now, r, sent_at);
}

Actions Contender::on_signal(int64_t now, int signo) {
  bool stop = is_stop_signal(signo);
  bool again = stop && m_stop_signal != 0; // asked to stop a second time
  if (stop && !m_stop_signal) m_stop_signal = signo;
  switch (phase()) {
  case Phase::contending:
    if (signo == SIGWINCH) return {};
    return cancel(now, 128 + signo);
  case Phase::owning:
  case Phase::draining:
  case Phase::stopping: return on_owner_signal(now, signo, stop, again);
  default: return {};
  }
}

action::Disown Contender::on_emergency() {
  // Token 0: whatever lease our owner id holds. An acquire in flight may
  // have taken one whose token we never learnt.
  m_state = Done{};
  m_in_flight.reset();
  return {0, k_emergency_release_timeout_ms};
}

Actions Contender::release_then_exit(int64_t now, int code, Actions acts) {
  // Contending, we own at most a lease whose acquire got no answer: its
  // token is unknown. Otherwise only the lease we held may go.
  uint64_t token = phase() == Phase::contending ? 0 : owner().lease.fencing_token;
  m_state = Releasing{token, code};
  if (m_in_flight) return acts; // on_reply sends the release after this reply
  return call(now, Op::release, std::move(acts));
}

// The force came between CMD's end (of it and all it started) and our
// release, or --min-hold's hold: the call changed nothing, and the lease
// would keep the waiters out until its transition_at, although nothing runs
// under it. Ours by its token (a revoked lease has no owner; tokens are
// never reused), not a quarantine (no token of ours). Only when simba exits
// next (run, and lead or schedule at their end): not a step's lease (the
// job's token, its other steps may run), nor simba acquire's, nor a slot's
// (Backend::end_revoked leaves a slot's row to run out).
std::optional<action::EndRevoked> Contender::revoked_after_cmd(const CallResult& r,
                                                               uint64_t token) const {
  using Mode = ContenderConfig::Mode;
  const Observed& o = r.observed;
  bool ours = r.status == CallResult::Status::ok && token != 0 && o.lease.revoked_at(o.now) &&
              !o.lease.quarantine && o.lease.fencing_token == token;
  bool exits = m_config.mode == Mode::run || long_running();
  if (!ours || !exits || m_config.slots != 1) return std::nullopt;
  // As long as the release it stands for may take.
  return action::EndRevoked{token, m_config.call_timeout_ms};
}

Actions Contender::finish(int64_t, int code, Actions acts) {
  m_state = Done{};
  action::Exit a{code, 0};
  // Asked to stop by signal N and ending with 128+N (CMD died of the
  // forwarded N, or there was no CMD): simba ends by N itself, after its
  // clean-up, so that a service manager sees a clean stop (systemd counts
  // only exit 0 or death by the signal it sent). Shells still see 128+N.
  // Not QUIT: its default action dumps simba's core.
  if (m_stop_signal && m_stop_signal != SIGQUIT && code == 128 + m_stop_signal) {
    a.signo = m_stop_signal;
  }
  acts.push_back(a);
  return acts;
}

} // namespace simba::core
