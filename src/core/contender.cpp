#include "core/contender.hpp"

#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/names.hpp"

#include <algorithm>
#include <csignal>

namespace simba::core {

namespace {

Action make(Action::Kind kind) {
  Action a;
  a.kind = kind;
  return a;
}

Action log_action(int level, std::string message) {
  Action a = make(Action::Kind::log);
  a.level = level;
  a.message = std::move(message);
  return a;
}

Action signal_action(Action::Kind kind, int signo) {
  Action a = make(kind);
  a.signo = signo;
  return a;
}

bool is_stop_signal(int signo) {
  return signo == SIGTERM || signo == SIGINT || signo == SIGHUP || signo == SIGQUIT;
}

std::string describe_owner(const Observed& o, const std::string& me) {
  if (o.lease.revoked_at(o.now)) return "the lease was revoked (release --force)";
  if (!o.lease.valid_at(o.now)) return "the lease is gone";
  if (o.lease.owner_id == me) {
    return "the lease now has fencing token " + std::to_string(o.lease.fencing_token);
  }
  return "the lease is now held by " + o.lease.owner_id;
}

} // namespace

int64_t safety_margin(int64_t ttl_ms, int64_t transition_ms) {
  return 2 + (ttl_ms + transition_ms) / 100;
}

Contender::Contender(ContenderConfig config, ContendPeriod period)
  : m_config(std::move(config)), m_period(std::move(period)) {}

Actions Contender::start(int64_t now) {
  m_phase = Phase::contending;
  m_wait_began = now;
  if (m_config.wait_timeout_ms) m_give_up_at = now + *m_config.wait_timeout_ms;
  return call(now, Op::acquire);
}

int64_t Contender::call_budget(int64_t now) const {
  int64_t budget = m_config.call_timeout_ms;
  if (m_phase == Phase::owning || m_phase == Phase::draining) {
    budget = std::min(budget, kill_point() - now); // never runs past the kill point
  } else if (m_phase == Phase::contending && m_give_up_at) {
    budget = std::min(budget, *m_give_up_at - now);
  }
  return std::max<int64_t>(budget, 1);
}

Actions Contender::call(int64_t now, Op op, Actions acts) {
  return call_with(now, op, m_config.ttl_ms, m_config.transition_ms, std::move(acts));
}

Actions Contender::call_with(int64_t now, Op op, int64_t ttl, int64_t transition, Actions acts) {
  m_in_flight = op;
  m_sent_at = now;
  if (op == Op::guard) m_guard_at.reset();
  if (op == Op::acquire) m_try_at.reset();
  Action a = make(Action::Kind::call);
  a.op = op;
  a.timeout_ms = call_budget(now);
  a.ttl_ms = ttl;
  a.transition_ms = transition;
  if (op == Op::guard || op == Op::hold) a.token = m_lease.fencing_token;
  if (op == Op::release) a.token = m_release_token;
  acts.push_back(a);
  return acts;
}

int64_t Contender::local_deadline(const Observed& o, int64_t sent_at) const {
  // Conservative: the backend's window is counted from when we *sent* the
  // request, minus a margin for clock drift (DESIGN §4).
  return sent_at + (o.lease.transition_at - o.now) - safety_margin(m_config.ttl_ms, m_config.transition_ms);
}

void Contender::adopt_lease(const Observed& o) {
  m_lease = o.lease;
  m_deadline = local_deadline(o, m_sent_at);
  int64_t guard_at = m_sent_at + (o.lease.ttl_at - o.now); // nextOwnerDelay
  // Leave room for retries before the kill point.
  guard_at = std::min(guard_at, kill_point() - m_config.retry_ms);
  m_guard_at = std::max(guard_at, m_sent_at);
}

Actions Contender::on_reply(int64_t now, const CallResult& r) {
  if (!m_in_flight) return {};
  Op op = *m_in_flight;
  m_in_flight.reset();
  if (r.status == CallResult::Status::ok) {
    m_last_backend_now = r.observed.now;
    m_last_reply_at = now;
  }
  if (m_phase == Phase::releasing && op != Op::release) {
    return call(now, Op::release); // the release waited for this reply
  }
  switch (op) {
  case Op::acquire: return on_acquire_reply(now, r);
  case Op::guard:
  case Op::hold: return on_guard_reply(now, r);
  case Op::release:
    if (r.status != CallResult::Status::ok) {
      // A release with token 0 follows only an acquire whose answer never
      // came: whether we hold anything is unknown (most likely not), and a
      // warning about "releasing" would say we held the lock.
      if (m_release_token == 0) {
        return finish(now, m_exit_after_release,
                      {log_action(1, "could not make sure that no lease of ours is left on " +
                                       m_config.mutex + " (" + r.error +
                                       "); a lease our unanswered acquire may have taken expires by itself")});
      }
      return finish(now, m_exit_after_release,
                    {log_action(2, "could not release " + m_config.mutex + " (" + r.error +
                                       "); it expires by itself")});
    }
    return finish(now, m_exit_after_release);
  }
  return {};
}

Actions Contender::on_acquire_reply(int64_t now, const CallResult& r) {
  // Nothing here for the hot path: an answered acquire after no failure
  // adds no action.
  Actions acts = track_backend(now, r);
  if (r.status == CallResult::Status::ok && !r.observed.lease.owned_by(m_config.contender_id, r.observed.now)) {
    see_holder(now, r.observed);
  }
  if (m_cancel_code) {
    // Cancelled (signal or --timeout) while this acquire was in flight.
    bool maybe = r.status == CallResult::Status::indeterminate ||
                 (r.status == CallResult::Status::ok &&
                  r.observed.lease.owned_by(m_config.contender_id, r.observed.now));
    if (m_timed_out) {
      m_maybe_owner = m_maybe_owner || maybe;
      return give_up(now, std::move(acts)); // this reply decides the code
    }
    if (maybe || m_maybe_owner) return release_then_exit(now, *m_cancel_code, std::move(acts));
    return finish(now, *m_cancel_code, std::move(acts));
  }
  if (m_phase != Phase::contending) return acts;
  if (r.status != CallResult::Status::ok) return on_acquire_failure(now, r, std::move(acts));
  const Observed& o = r.observed;
  if (o.lease.owned_by(m_config.contender_id, o.now)) {
    m_maybe_owner = true;
    adopt_lease(o);
    if (kill_point() <= now) {
      // The reply came so late that the lease would have to be stopped at
      // once: renew before starting anything -- after a retry period, or a
      // backend slower than the lease would be asked in a loop.
      acts.push_back(log_action(2, "acquire reply came too late to use; renewing"));
      return retry_acquire_later(now, m_config.retry_ms, std::move(acts));
    }
    m_phase = Phase::owning;
    acts.push_back(log_action(long_running() ? 0 : 1,
                              "acquired " + m_config.mutex + " (fencing token " +
                                std::to_string(m_lease.fencing_token) + ")"));
    return on_owned(now, std::move(acts));
  }
  m_maybe_owner = false;
  return on_busy(now, o, std::move(acts));
}

// A failed acquire, or one whose outcome is unknown: tried again after a
// back-off (ContendPeriod::backoff_delay), never at once; --no-wait gives up.
Actions Contender::on_acquire_failure(int64_t now, const CallResult& r, Actions acts) {
  if (r.status == CallResult::Status::indeterminate) {
    // It may have been applied: never start CMD on it. Acquire again — for
    // the owner that is a renewal — and learn the truth.
    m_maybe_owner = true;
    if (m_config.no_wait && ++m_unknown_replies > 1) {
      // --no-wait does not wait on a backend that does not answer either.
      acts.push_back(log_action(4, "backend unavailable: " + m_last_error));
      return release_then_exit(now, exit_code::k_unavailable, std::move(acts));
    }
  } else if (m_config.no_wait) {
    acts.push_back(log_action(4, "backend unavailable: " + m_last_error));
    if (m_maybe_owner) return release_then_exit(now, exit_code::k_unavailable, std::move(acts));
    return finish(now, exit_code::k_unavailable, std::move(acts));
  }
  acts = remind_if_due(now, std::move(acts));
  return retry_acquire_later(
    now, m_period.backoff_delay(m_failures, m_config.retry_ms, m_config.backoff_max_ms), std::move(acts));
}

// Keeps count of a series of failed acquires: a warning at its first, one
// line when the backend answers again; between them, verbose lines only.
Actions Contender::track_backend(int64_t now, const CallResult& r) {
  if (r.status == CallResult::Status::ok) {
    if (m_failures == 0) return {};
    Actions acts;
    if (!m_config.no_wait) acts.push_back(notice(now, WaitNotice::Event::backend_back, 0));
    m_failures = 0;
    return acts;
  }
  m_last_error = r.status == CallResult::Status::indeterminate ? "no answer in time (" + r.error + ")" : r.error;
  if (m_failures++ == 0) {
    m_failing_since = now;
    // --no-wait says it when it gives up (on_acquire_failure)
    if (!m_config.no_wait) return {notice(now, WaitNotice::Event::backend_failing, 2)};
    return {};
  }
  return {log_action(1, "acquire failed again (" + m_last_error + "); " + std::to_string(m_failures) +
                          " failures in a row")};
}

// The holder an answered acquire showed: for the notices.
void Contender::see_holder(int64_t now, const Observed& o) {
  m_holder = o.lease;
  m_holder_seen_backend_now = o.now;
  m_holder_seen_at = now;
  m_holder_known = true;
}

// Another contender holds the mutex (or its revoked lease runs out).
Actions Contender::on_busy(int64_t now, const Observed& o, Actions acts) {
  bool free = o.lease.free_at(o.now);
  if (m_config.no_wait) {
    if (!free) acts.push_back(notice(now, WaitNotice::Event::busy, 0));
    return finish(now, m_config.conflict_exit_code, std::move(acts));
  }
  int64_t delay = free ? 0 : m_period.ensure_next_delay(o);
  if (!m_announced_wait && !free) {
    // Once: what we wait for. Shown in any log (unless -q): a CI job's log
    // without it would show nothing until the exit.
    m_announced_wait = true;
    acts.push_back(notice(now, WaitNotice::Event::waiting, 0));
  } else {
    acts = remind_if_due(now, std::move(acts));
  }
  return retry_acquire_later(now, delay, std::move(acts));
}

// run: the notice again every notice_every_ms of waiting (at the first reply
// after it is due: with the holder of that moment). Not for lead and
// schedule: a standby waits for months, and says so once.
Actions Contender::remind_if_due(int64_t now, Actions acts) {
  if (long_running() || m_config.notice_every_ms <= 0) return acts;
  if (!m_remind_at) m_remind_at = m_wait_began + m_config.notice_every_ms;
  if (now < *m_remind_at) return acts;
  m_remind_at = now + m_config.notice_every_ms;
  acts.push_back(notice(now, WaitNotice::Event::still_waiting, 0));
  return acts;
}

Action Contender::notice(int64_t now, WaitNotice::Event event, int level) const {
  WaitNotice n;
  n.event = event;
  n.mutex = m_config.mutex;
  n.waited_ms = now - m_wait_began;
  if (m_give_up_at && event != WaitNotice::Event::gave_up) n.gives_up_in_ms = std::max<int64_t>(*m_give_up_at - now, 0);
  if (m_holder_known) {
    // The holder as last seen (it has most likely renewed since), its
    // times aged by the local time since.
    int64_t seen = m_holder_seen_backend_now;
    int64_t backend_now = seen + (now - m_holder_seen_at);
    if (!m_holder.free_at(seen) && !m_holder.owned_by(m_config.contender_id, seen)) {
      n.revoked = m_holder.revoked_at(seen);
      n.holder_id = m_holder.owner_id;
      n.holder_has_our_label = !same_label(m_holder).empty();
      if (!n.revoked) n.held_ms = backend_now - m_holder.acquired_at;
      n.free_in_ms = std::max<int64_t>(m_holder.transition_at - backend_now, 0);
    }
  }
  if (m_failures > 0) {
    n.error = m_last_error;
    n.failing_ms = now - m_failing_since;
    n.failures = m_failures;
    n.retry_max_ms = std::max(m_config.backoff_max_ms, m_config.retry_ms);
  }
  Action a = log_action(level, "");
  a.notice = std::move(n);
  return a;
}

// --timeout passed: 69 if the backend is failing (its error says why),
// else the conflict code, with the holder last seen.
Actions Contender::give_up(int64_t now, Actions acts) {
  m_timed_out = true;
  if (m_in_flight) {
    m_cancel_code = m_config.conflict_exit_code; // the reply decides (on_acquire_reply)
    return acts;
  }
  bool failing = m_failures > 0;
  int code = failing ? exit_code::k_unavailable : m_config.conflict_exit_code;
  acts.push_back(notice(now, WaitNotice::Event::gave_up, failing ? 4 : 0));
  if (m_maybe_owner) return release_then_exit(now, code, std::move(acts));
  return finish(now, code, std::move(acts));
}

// For the person who gave two processes one --contender-id: the holder
// with our label is another process, not us.
std::string Contender::same_label(const Lease& l) const {
  bool ours = !m_config.label.empty() && label_of(l.owner_id) == m_config.label;
  return ours ? " (another simba with --contender-id " + m_config.label + ")" : "";
}

Actions Contender::on_owned(int64_t now, Actions acts) {
  if (m_config.mode == ContenderConfig::Mode::schedule) {
    m_rate_origin = now + m_config.initial_delay_ms;
    m_next_start_at = m_rate_origin;
    if (m_config.initial_delay_ms > 0) return acts;
    // fixed-rate: the next tick; fixed-delay: set when this run is over
    m_next_start_at.reset();
    if (m_config.fixed_rate) m_next_start_at = next_tick(now);
  }
  return start_cmd(now, std::move(acts));
}

Actions Contender::start_cmd(int64_t now, Actions acts) {
  (void)now;
  m_child_running = true;
  ++m_runs;
  Action a = make(Action::Kind::start_child);
  a.lease = m_lease;
  a.deadline = m_deadline;
  acts.push_back(a);
  return acts;
}

// Fixed rate: ticks at origin + k * every; the first one after `now`.
int64_t Contender::next_tick(int64_t now) const {
  int64_t every = std::max<int64_t>(m_config.every_ms, 1);
  if (now < m_rate_origin) return m_rate_origin;
  return m_rate_origin + ((now - m_rate_origin) / every + 1) * every;
}

Actions Contender::retry_acquire_later(int64_t now, int64_t delay, Actions acts) {
  m_try_at = now + std::max<int64_t>(delay, 0);
  return acts;
}

Actions Contender::on_guard_reply(int64_t now, const CallResult& r) {
  if (m_phase != Phase::owning && m_phase != Phase::draining) return {};
  if (r.status != CallResult::Status::ok) {
    if (m_holding) {
      // CMD is done; the lease stays until its own transition_at anyway.
      return finish(now, m_child_code,
                    {log_action(2, "could not extend the lease for --min-hold: " + r.error)});
    }
    m_guard_at = now + m_config.retry_ms; // on_timer stops CMD at the kill point first
    return {log_action(2, "guard failed: " + r.error + "; retrying")};
  }
  const Observed& o = r.observed;
  if (!o.lease.owned_by(m_config.contender_id, o.now) ||
      o.lease.fencing_token != m_lease.fencing_token) {
    std::string why = describe_owner(o, m_config.contender_id);
    if (!r.error.empty()) why += " (" + r.error + ")"; // the backend's remark on an ok reply
    if (m_holding) {
      return finish(now, m_child_code, {log_action(2, "lease lost during --min-hold: " + why)});
    }
    return begin_stop(now, "ownership of " + m_config.mutex + " lost: " + why);
  }
  adopt_lease(o);
  if (m_holding && !m_hold_sent) return after_all_gone(now, {});
  if (m_holding) return finish(now, m_child_code);
  Action a = make(Action::Kind::set_deadline);
  a.deadline = m_deadline;
  return {a, log_action(1, "renewed " + m_config.mutex + " until +" +
                               format_duration(o.lease.transition_at - o.now))};
}

Actions Contender::begin_stop(int64_t now, const std::string& why, Actions acts) {
  bool cmd_alive = m_child_running || m_phase == Phase::draining;
  m_phase = Phase::stopping;
  m_guard_at.reset();
  m_next_start_at.reset();
  if (!cmd_alive) {
    // lead/schedule between runs: nothing to stop
    acts.push_back(log_action(2, why));
    return after_loss(now, std::move(acts));
  }
  acts.push_back(log_action(2, why + "; stopping the command"));
  acts.push_back(signal_action(Action::Kind::signal_all, m_config.kill_signal));
  m_kill_at = std::min(now + m_config.kill_after_ms, m_deadline);
  if (*m_kill_at <= now) {
    acts.push_back(signal_action(Action::Kind::signal_all, SIGKILL));
    m_kill_at.reset();
  }
  return acts;
}

Actions Contender::on_timer(int64_t now) {
  switch (m_phase) {
  case Phase::contending:
    if (m_give_up_at && now >= *m_give_up_at) return give_up(now);
    if (m_try_at && now >= *m_try_at && !m_in_flight) return call(now, Op::acquire);
    return {};
  case Phase::owning:
  case Phase::draining: {
    if (!m_holding && now >= kill_point()) {
      return begin_stop(now, "no renewal of " + m_config.mutex + " before its deadline");
    }
    if (m_holding && now >= kill_point()) return finish(now, m_child_code);
    Actions acts;
    if (m_kill_at && now >= *m_kill_at) {
      m_kill_at.reset();
      acts.push_back(signal_action(Action::Kind::signal_all, SIGKILL));
    }
    if (m_next_start_at && now >= *m_next_start_at) {
      bool busy = m_child_running || m_phase == Phase::draining;
      bool rate = m_config.mode == ContenderConfig::Mode::schedule && m_config.fixed_rate;
      m_next_start_at.reset();
      if (rate) m_next_start_at = next_tick(now);
      if (busy) {
        acts.push_back(log_action(0, "tick skipped: the previous run is still running"));
      } else {
        acts = start_cmd(now, std::move(acts));
      }
    }
    return guard_if_due(now, std::move(acts));
  }
  case Phase::stopping:
    if (m_kill_at && now >= *m_kill_at) {
      m_kill_at.reset();
      return {signal_action(Action::Kind::signal_all, SIGKILL)};
    }
    return {};
  default: return {};
  }
}

Actions Contender::guard_if_due(int64_t now, Actions acts) {
  if (m_guard_at && now >= *m_guard_at && !m_in_flight) {
    return call(now, Op::guard, std::move(acts));
  }
  return acts;
}

std::optional<int64_t> Contender::wake_at() const {
  std::optional<int64_t> at;
  auto take = [&](std::optional<int64_t> t) {
    if (t && (!at || *t < *at)) at = t;
  };
  switch (m_phase) {
  case Phase::contending:
    if (!m_in_flight) take(m_try_at);
    take(m_give_up_at);
    break;
  case Phase::owning:
  case Phase::draining:
    if (!m_in_flight) take(m_guard_at);
    take(kill_point());
    take(m_kill_at);
    take(m_next_start_at);
    break;
  case Phase::stopping: take(m_kill_at); break;
  default: break;
  }
  return at;
}

Actions Contender::on_grant(int64_t now, const CallResult& r, int64_t sent_at) {
  if (m_phase != Phase::contending || m_in_flight || m_cancel_code) return {};
  if (r.status != CallResult::Status::ok ||
      !r.observed.lease.owned_by(m_config.contender_id, r.observed.now) || sent_at > now)
    return {};
  m_try_at.reset();
  m_last_backend_now = r.observed.now;
  m_last_reply_at = now;
  // Counted from `sent_at`, the lease of a waiter that waited long is short
  // already: with less than half a ttl left before its kill point, CMD
  // would start with its first guard racing that point. Renew first (our
  // acquire is a renewal now), as after a reply that came too late.
  int64_t kill_at = local_deadline(r.observed, sent_at) - m_config.kill_after_ms;
  if (kill_at - now < m_config.ttl_ms / 2) {
    m_maybe_owner = true;
    return call(now, Op::acquire, {log_action(1, "handed " + m_config.mutex + " long after queueing; renewing first")});
  }
  m_sent_at = sent_at;
  return on_acquire_reply(now, r);
}

Actions Contender::on_notify(int64_t now) {
  if (m_in_flight) return {};
  // While the backend fails, a wake-up does not cut the back-off short: a
  // notification channel that keeps firing must not make a loop of it.
  if (m_phase == Phase::contending && m_failures > 0) return {};
  if (m_phase == Phase::contending) return call(now, Op::acquire);
  // While we own the mutex only a forced release notifies: check at once.
  if (m_phase == Phase::owning && !m_holding) return call(now, Op::guard);
  return {};
}

Actions Contender::on_child_exit(int64_t now, int shell_code, bool leftovers) {
  m_child_code = shell_code;
  m_child_running = false;
  if (m_phase == Phase::stopping) {
    if (!leftovers) return on_all_gone(now);
    return {};
  }
  if (m_phase != Phase::owning) return {};
  if (now >= kill_point()) {
    // Noticed after the kill point (simba was stopped or hung; the watchdog
    // may have killed CMD): we cannot vouch that CMD ran within its lease.
    if (leftovers) m_phase = Phase::draining; // begin_stop stops them
    return begin_stop(now, "command exited after the lease's kill point");
  }
  m_phase = Phase::draining;
  Actions acts{log_action(long_running() ? 0 : 1,
                          "command exited with status " + std::to_string(shell_code))};
  if (!leftovers) return after_all_gone(now, std::move(acts));
  // What CMD left running still acts under the lock: stop it before the
  // release (DESIGN §7).
  acts.push_back(log_action(1, "stopping what the command left running"));
  acts.push_back(signal_action(Action::Kind::signal_all, m_config.kill_signal));
  m_kill_at = now + m_config.kill_after_ms;
  return acts;
}

Actions Contender::on_all_gone(int64_t now) {
  m_kill_at.reset();
  if (m_phase == Phase::stopping) return after_loss(now, {});
  if (m_phase == Phase::draining) return after_all_gone(now, {});
  return {};
}

Actions Contender::after_loss(int64_t now, Actions acts) {
  // We may still own it if we only lost contact: release so others need
  // not wait for the expiry (a no-op when someone else owns it).
  if (!long_running()) return release_then_exit(now, exit_code::k_lost, std::move(acts));
  if (m_shutdown) return release_then_exit(now, m_child_code, std::move(acts));
  return recontend(now, std::move(acts));
}

Actions Contender::recontend(int64_t now, Actions acts) {
  m_phase = Phase::contending;
  m_wait_began = now;
  m_remind_at.reset();
  m_child_running = false;
  m_next_start_at.reset();
  m_guard_at.reset();
  m_kill_at.reset();
  acts.push_back(log_action(0, "contending for " + m_config.mutex + " again"));
  if (m_in_flight) {
    m_try_at = now; // after the reply in flight
    return acts;
  }
  return call(now, Op::acquire, std::move(acts));
}

Actions Contender::after_all_gone(int64_t now, Actions acts) {
  using Mode = ContenderConfig::Mode;
  if (m_config.mode != Mode::run) {
    int code = m_child_code;
    bool done = m_shutdown;
    if (m_config.mode == Mode::lead) {
      using R = ContenderConfig::Restart;
      done = done || m_config.restart == R::never ||
             (m_config.restart == R::on_failure && code == 0);
    } else {
      done = done || (m_config.max_runs && m_runs >= *m_config.max_runs);
    }
    if (done) {
      acts.push_back(log_action(0, "releasing " + m_config.mutex));
      return release_then_exit(now, code, std::move(acts));
    }
    m_phase = Phase::owning;
    m_kill_at.reset();
    if (m_config.mode == Mode::lead) {
      m_next_start_at = now + m_config.restart_delay_ms;
      acts.push_back(log_action(0, "restarting the command in " +
                                     format_duration(m_config.restart_delay_ms)));
    } else if (!m_config.fixed_rate) {
      m_next_start_at = now + m_config.every_ms;
    }
    return acts;
  }
  if (m_config.min_hold_ms > 0) {
    // --min-hold: keep the lease until acquired_at + D (backend clock), then
    // exit at once. The backend's now is estimated from the last reply.
    int64_t backend_now = m_last_backend_now + (now - m_last_reply_at);
    int64_t remaining = m_lease.acquired_at + m_config.min_hold_ms - backend_now;
    if (remaining > 0) {
      m_holding = true;
      m_guard_at.reset();
      if (m_in_flight) return acts; // on_guard_reply sends the hold after this reply
      m_hold_sent = true;
      acts.push_back(log_action(1, "holding " + m_config.mutex + " for --min-hold, " +
                                       format_duration(remaining) + " more"));
      return call_with(now, Op::hold, remaining, 0, std::move(acts));
    }
  }
  return release_then_exit(now, m_child_code, std::move(acts));
}

Actions Contender::on_signal(int64_t now, int signo) {
  bool stop = is_stop_signal(signo);
  bool again = stop && m_stop_signal != 0; // asked to stop a second time
  if (stop && !m_stop_signal) m_stop_signal = signo;
  switch (m_phase) {
  case Phase::contending:
    if (signo == SIGWINCH) return {};
    return cancel(now, 128 + signo);
  case Phase::owning:
  case Phase::draining:
  case Phase::stopping: {
    if (again && (m_child_running || m_phase == Phase::draining) && !m_kill_at) {
      // CMD did not stop on the forwarded signal: the kill sequence now.
      m_kill_at = now + m_config.kill_after_ms;
      return {log_action(2, "asked again to stop: the kill signal to the command and all it "
                              "started, SIGKILL in " + format_duration(m_config.kill_after_ms)),
              signal_action(Action::Kind::signal_all, m_config.kill_signal)};
    }
    if (long_running() && stop) {
      m_shutdown = true;
      m_next_start_at.reset();
      // Between runs there is nothing to forward to: release and exit.
      if (m_phase == Phase::owning && !m_child_running) {
        return release_then_exit(now, 128 + signo, {log_action(0, "releasing " + m_config.mutex)});
      }
    }
    return {signal_action(Action::Kind::signal_child, signo)};
  }
  default: return {};
  }
}

Actions Contender::cancel(int64_t now, int code) {
  m_timed_out = false; // a signal decides now, not --timeout
  if (m_in_flight) {
    m_cancel_code = code;
    return {};
  }
  if (m_maybe_owner) return release_then_exit(now, code);
  return finish(now, code);
}

Actions Contender::release_then_exit(int64_t now, int code, Actions acts) {
  // Contending, we own at most a lease whose acquire got no answer: its
  // token is unknown. Otherwise only the lease we held may go.
  m_release_token = m_phase == Phase::contending ? 0 : m_lease.fencing_token;
  m_phase = Phase::releasing;
  m_exit_after_release = code;
  m_guard_at.reset();
  m_kill_at.reset();
  if (m_in_flight) return acts; // on_reply sends the release after this reply
  return call(now, Op::release, std::move(acts));
}

Actions Contender::finish(int64_t, int code, Actions acts) {
  m_phase = Phase::done;
  Action a = make(Action::Kind::exit);
  a.code = code;
  // Asked to stop by signal N and ending with 128+N (CMD died of the
  // forwarded N, or there was no CMD): simba ends by N itself, after its
  // clean-up, so that a service manager sees a clean stop (systemd counts
  // only exit 0 or death by the signal it sent). Shells still see 128+N.
  // Not QUIT: its default action dumps simba's core.
  if (m_stop_signal && m_stop_signal != SIGQUIT && code == 128 + m_stop_signal) a.signo = m_stop_signal;
  acts.push_back(a);
  return acts;
}

} // namespace simba::core
