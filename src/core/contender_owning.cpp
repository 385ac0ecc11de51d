// The owner's side of the contender (phases owning, draining, stopping):
// CMD's runs under the lease, the guard that renews it, the stop when it is
// lost, and what follows CMD's exit (restart, next run, --min-hold, release).
#include "core/contender.hpp"
#include "core/schedule_phase.hpp"

#include "core/duration.hpp"
#include "core/error.hpp"

#include <algorithm>
#include <csignal>

namespace simba::core {

namespace {

std::string describe_owner(const Observed& o, const std::string& me) {
  if (o.lease.revoked_at(o.now))
    return o.lease.quarantine ? "the backend lost the lease (quarantine)"
                              : "the lease was revoked (release --force)";
  if (!o.lease.valid_at(o.now)) return "the lease is gone";
  if (o.lease.owner_id == me) {
    return "the lease now has fencing token " + std::to_string(o.lease.fencing_token);
  }
  return "the lease is now held by " + o.lease.owner_id;
}

// The reason of the lost event for a reply that shows our lease gone, as
// describe_owner words it.
LossReason reason_of(const Observed& o) {
  if (o.lease.revoked_at(o.now)) return o.lease.quarantine ? LossReason::gone : LossReason::revoked;
  if (!o.lease.valid_at(o.now)) return LossReason::gone;
  return LossReason::taken;
}

// The lost event's budget: short, it only tells the history (docs/commands.md,
// "simba history"); never more than an ordinary call's.
constexpr int64_t k_lost_record_timeout_ms = 1000;

} // namespace

Actions Contender::on_owned(int64_t now, Actions acts) {
  if (m_config.mode == ContenderConfig::Mode::acquire) return keep_lease(now, std::move(acts));
  if (m_config.mode == ContenderConfig::Mode::schedule) {
    // First the last run's start (any leader's): the first run is planned
    // from it (plan_first_run), not made at once.
    Owner& o = owner();
    o.phase_pending = true;
    o.guard_at = now;
    return guard_if_due(now, std::move(acts));
  }
  return start_cmd(now, std::move(acts));
}

// schedule: the answer to the guard that read the last run's start
// (core/schedule_phase.hpp), the backend's times moved onto the local clock.
Actions Contender::plan_first_run(int64_t now, const CallResult& r, Actions acts) {
  Owner& o = owner();
  o.phase_pending = false;
  int64_t bnow = r.observed.now;
  SchedulePlan p = plan_schedule(r.last_run_at, bnow, m_config.every_ms, m_config.align,
                                 m_config.initial_delay_ms);
  o.rate_origin = now + (p.origin - bnow);
  int64_t first = now + (p.first_run_at - bnow);
  if (r.last_run_at)
    acts.push_back(action::Log{LogLevel::info,
                               "the last run started " + format_duration(bnow - *r.last_run_at) +
                                   " ago; the next one in " +
                                   format_duration(std::max<int64_t>(first - now, 0))});
  if (first > now) {
    o.next_start_at = first;
    return acts;
  }
  // fixed-rate: the next tick; fixed-delay: set when this run is over
  o.next_start_at.reset();
  if (m_config.fixed_rate) o.next_start_at = next_tick(now);
  o.run_pending = true;
  o.guard_at = now;
  return guard_if_due(now, std::move(acts));
}

// A schedule's guard was answered, the lease ours: plan, or run; a mark
// still to be made (the answered guard was an ordinary one) goes out now.
Actions Contender::on_marked(int64_t now, const CallResult& r, RunMark mark, Actions acts) {
  Owner& o = owner();
  if (mark == RunMark::read && o.phase_pending) return plan_first_run(now, r, std::move(acts));
  if (mark == RunMark::record && o.run_pending) {
    if (o.kill_point <= now) { // answered too late to start anything: renew first
      o.guard_at = now + m_config.retry_ms;
      return acts;
    }
    o.run_pending = false;
    if (!o.child_running && o.stage == Phase::owning && !m_shutdown)
      return start_cmd(now, std::move(acts));
    return acts;
  }
  if (o.phase_pending || o.run_pending) {
    o.guard_at = now;
    return guard_if_due(now, std::move(acts));
  }
  return acts;
}

Actions Contender::start_cmd(int64_t, Actions acts) {
  Owner& o = owner();
  o.child_running = true;
  ++m_runs;
  acts.push_back(action::StartChild{o.lease, o.deadline});
  return acts;
}

// Fixed rate: ticks at origin + k * every; the first one after `now`.
int64_t Contender::next_tick(int64_t now) const {
  int64_t every = std::max<int64_t>(m_config.every_ms, 1);
  int64_t origin = owner().rate_origin;
  if (now < origin) return origin;
  return origin + ((now - origin) / every + 1) * every;
}

Actions Contender::on_guard_reply(int64_t now, const CallResult& r, int64_t sent_at, RunMark mark) {
  if (phase() != Phase::owning && phase() != Phase::draining) return {};
  Owner& own = owner();
  if (split_phase()) {
    if (own.holding) return on_keep_reply(now, r, sent_at);
    if (m_config.mode == ContenderConfig::Mode::step && m_runs == 0)
      return on_step_confirmed(now, r, sent_at);
  }
  if (r.status == CallResult::Status::refused && !own.holding) {
    // No guard will ever be answered: stop CMD now, not at the kill point,
    // and end with 69 (README and docs/backends/redis.md "ACL users"), not contend again.
    m_refused = true;
    return begin_stop(now, r.error, {LossReason::refused, {}, {}});
  }
  if (r.status != CallResult::Status::ok) {
    if (own.holding) {
      // CMD is done; the lease stays until its own transition_at anyway.
      return finish(now, m_child_code,
                    {action::Log{LogLevel::warning,
                                 "could not extend the lease for --min-hold: " + r.error}});
    }
    own.guard_at = now + m_config.retry_ms; // on_timer stops CMD at the kill point first
    return {guard_failed(now, r.error)};
  }
  const Observed& o = r.observed;
  if (!o.lease.owned_by(m_config.contender_id, o.now) ||
      o.lease.fencing_token != own.lease.fencing_token) {
    std::string why = describe_owner(o, m_config.contender_id);
    if (!r.error.empty()) why += " (" + r.error + ")"; // the backend's remark on an ok reply
    if (own.holding) {
      Actions acts{action::Log{LogLevel::warning, "lease lost during --min-hold: " + why}};
      if (auto end = revoked_after_cmd(r, own.lease.fencing_token)) acts.push_back(*end);
      return finish(now, m_child_code, std::move(acts));
    }
    LossSeen loss{reason_of(o), {}, {}};
    if (loss.reason == LossReason::taken) loss.by = o.lease.owner_id;
    return begin_stop(now, "ownership of " + m_config.mutex + " lost: " + why, std::move(loss));
  }
  own.adopt(o.lease, owner_times(o, sent_at));
  if (own.holding && !own.hold_sent) return after_all_gone(now, {});
  if (own.holding) return finish(now, m_child_code);
  Actions acts{action::SetDeadline{own.deadline}};
  if (own.guard_failures > 0) {
    acts.push_back(action::Log{
        LogLevel::info, "guard answered again after " +
                            format_duration(now - own.guard_failing_since) + " (" +
                            std::to_string(own.guard_failures) + " failed); renewed " +
                            m_config.mutex + " until +" +
                            format_duration(o.lease.transition_at - o.now)});
    own.guard_failures = 0;
  } else {
    acts.push_back(action::Log{LogLevel::verbose,
                               "renewed " + m_config.mutex + " until +" +
                                   format_duration(o.lease.transition_at - o.now)});
  }
  if (m_config.mode == ContenderConfig::Mode::schedule)
    return on_marked(now, r, mark, std::move(acts));
  return acts;
}

// A guard that failed (or got no answer): a warning at the first of an
// outage, with the time CMD has left; verbose lines for the retries after
// it (4 a second at the default --ttl would bury the log).
Action Contender::guard_failed(int64_t now, const std::string& error) {
  Owner& own = owner();
  if (own.guard_failures++ > 0) {
    return action::Log{LogLevel::verbose, "guard failed again (" + error + "); " +
                                              std::to_string(own.guard_failures) +
                                              " failures in a row"};
  }
  own.guard_failing_since = now;
  std::string left = own.child_running
                         ? "the command is stopped in " +
                               format_duration(std::max<int64_t>(own.kill_point - now, 0)) +
                               " unless it answers"
                         : "the lease runs out in " +
                               format_duration(std::max<int64_t>(own.deadline - now, 0)) +
                               " unless it answers";
  return action::Log{LogLevel::warning, "guard failed: " + error + "; retrying every " +
                                            format_duration(m_config.retry_ms) + "; " + left};
}

Actions Contender::begin_stop(int64_t now, const std::string& why, LossSeen loss, Actions acts) {
  Owner& o = owner();
  bool cmd_alive = o.child_running || o.stage == Phase::draining;
  // The lost event (after_loss): held until now, on the backend's clock as
  // the last reply gave it. CMD that already exited (draining) has its code.
  action::RecordLost lost;
  lost.token = o.lease.fencing_token;
  lost.reason = loss.reason;
  lost.by = std::move(loss.by);
  lost.exit_code = loss.exit_code;
  if (!lost.exit_code && o.stage == Phase::draining) lost.exit_code = m_child_code;
  lost.held_ms =
      std::max<int64_t>(0, m_last_backend_now + (now - m_last_reply_at) - o.lease.acquired_at);
  lost.timeout_ms = std::min(m_config.call_timeout_ms, k_lost_record_timeout_ms);
  lost.end_revoked = loss.reason == LossReason::revoked &&
                     m_config.mode == ContenderConfig::Mode::run && m_config.slots == 1;
  o.lost = std::move(lost);
  o.stage = Phase::stopping;
  o.guard_at.reset();
  o.next_start_at.reset();
  if (!cmd_alive) {
    // lead/schedule between runs: nothing to stop
    acts.push_back(action::Log{m_refused ? LogLevel::error : LogLevel::warning, why});
    return after_loss(now, std::move(acts));
  }
  LogLevel level = m_refused ? LogLevel::error : LogLevel::warning;
  acts.push_back(action::Log{level, why + "; stopping the command"});
  acts.push_back(action::SignalAll{m_config.kill_signal});
  o.kill_at = std::min(now + m_config.kill_after_ms, o.deadline);
  if (*o.kill_at <= now) {
    acts.push_back(action::SignalAll{SIGKILL});
    o.kill_at.reset();
  }
  return acts;
}

Actions Contender::on_owner_timer(int64_t now) {
  Owner& o = owner();
  if (o.stage == Phase::stopping) {
    if (!o.kill_at || now < *o.kill_at) return {};
    o.kill_at.reset();
    return {action::SignalAll{SIGKILL}};
  }
  if (now >= o.kill_point) {
    if (o.holding) return finish(now, m_child_code);
    return begin_stop(now, "no renewal of " + m_config.mutex + " before its deadline",
                      {LossReason::unrenewed, {}, {}});
  }
  Actions acts;
  if (o.kill_at && now >= *o.kill_at) {
    o.kill_at.reset();
    acts.push_back(action::SignalAll{SIGKILL});
  }
  if (o.next_start_at && now >= *o.next_start_at) {
    bool busy = o.child_running || o.stage == Phase::draining;
    bool rate = m_config.mode == ContenderConfig::Mode::schedule && m_config.fixed_rate;
    o.next_start_at.reset();
    if (rate) o.next_start_at = next_tick(now);
    if (busy) {
      acts.push_back(
          action::Log{LogLevel::info, "tick skipped: the previous run is still running"});
    } else if (m_config.mode == ContenderConfig::Mode::schedule) {
      // The run starts once its start is recorded (on_marked).
      o.run_pending = true;
      o.guard_at = now;
    } else {
      acts = start_cmd(now, std::move(acts));
    }
  }
  return guard_if_due(now, std::move(acts));
}

// The guard first; a lead's question who waits (after a failed run) when
// no guard is due.
Actions Contender::guard_if_due(int64_t now, Actions acts) {
  Owner& o = owner();
  if (m_in_flight) return acts;
  if (o.guard_at && now >= *o.guard_at) return call(now, Op::guard, std::move(acts));
  if (!o.look_at || now < *o.look_at) return acts;
  o.look_at.reset();
  if (o.stage != Phase::owning || o.child_running) return acts;
  return call(now, Op::waiters, std::move(acts));
}

Actions Contender::on_owner_signal(int64_t now, int signo, bool stop, bool again) {
  if (m_config.mode == ContenderConfig::Mode::acquire) return on_split_signal(now, signo);
  Owner& o = owner();
  if (again && (o.child_running || o.stage == Phase::draining) && !o.kill_at) {
    // CMD did not stop on the forwarded signal: the kill sequence now.
    o.kill_at = now + m_config.kill_after_ms;
    return {action::Log{LogLevel::warning,
                        "asked again to stop: the kill signal to the command and all it "
                        "started, SIGKILL in " +
                            format_duration(m_config.kill_after_ms)},
            action::SignalAll{m_config.kill_signal}};
  }
  if (long_running() && stop) {
    m_shutdown = true;
    o.next_start_at.reset();
    // CMD had exited (what it left may still run): this run's status is
    // not how simba ends, the signal is (after_run).
    if (!o.child_running) o.stopped_after_exit = true;
    // Between runs there is nothing to forward to: release and exit.
    if (o.stage == Phase::owning && !o.child_running) {
      return release_then_exit(now, 128 + signo,
                               {action::Log{LogLevel::info, "releasing " + m_config.mutex}});
    }
  }
  return {action::SignalChild{signo}};
}

Actions Contender::on_child_exit(int64_t now, int shell_code, bool leftovers) {
  m_child_code = shell_code;
  auto* o = std::get_if<Owner>(&m_state);
  if (!o) return {};
  o->child_running = false;
  if (o->stage == Phase::stopping) {
    if (o->lost && !o->lost->exit_code) o->lost->exit_code = shell_code;
    return leftovers ? Actions{} : on_all_gone(now);
  }
  if (o->stage != Phase::owning) return {};
  if (now >= o->kill_point) {
    // Noticed after the kill point (simba was stopped or hung; the watchdog
    // may have killed CMD): we cannot vouch that CMD ran within its lease.
    if (leftovers) o->stage = Phase::draining; // begin_stop stops them
    return begin_stop(now, "command exited after the lease's kill point",
                      {LossReason::unrenewed, {}, shell_code});
  }
  o->stage = Phase::draining;
  Actions acts{action::Log{long_running() ? LogLevel::info : LogLevel::verbose,
                           "command exited with status " + std::to_string(shell_code)}};
  if (!leftovers) return after_all_gone(now, std::move(acts));
  // What CMD left running still acts under the lock: stop it before the
  // release (DESIGN §7).
  acts.push_back(action::Log{LogLevel::verbose, "stopping what the command left running"});
  acts.push_back(action::SignalAll{m_config.kill_signal});
  o->kill_at = now + m_config.kill_after_ms;
  return acts;
}

Actions Contender::on_all_gone(int64_t now) {
  auto* o = std::get_if<Owner>(&m_state);
  if (!o) return {};
  o->kill_at.reset();
  if (o->stage == Phase::stopping) return after_loss(now, {});
  if (o->stage == Phase::draining) return after_all_gone(now, {});
  return {};
}

Actions Contender::after_loss(int64_t now, Actions acts) {
  // The history hears of the loss from us first (the lease as it stands
  // is unchanged by that write), then the release below.
  bool lost_ends_revoked = false;
  if (auto* o = std::get_if<Owner>(&m_state); o && o->lost) {
    lost_ends_revoked = o->lost->end_revoked;
    acts.push_back(std::move(*o->lost));
    o->lost.reset();
  }
  // We may still own it if we only lost contact: release so others need
  // not wait for the expiry (a no-op when someone else owns it).
  // A step leaves the lease to the job (a no-op on a lease that is gone).
  // A refused guard (m_refused) ends with 69, in every mode.
  int code = m_refused ? exit_code::k_unavailable : exit_code::k_lost;
  if (m_config.mode == ContenderConfig::Mode::step) return finish(now, code, std::move(acts));
  if (long_running() && !m_refused && !m_shutdown) return recontend(now, std::move(acts));
  if (long_running() && !m_refused) code = m_child_code; // stopped: CMD's status
  acts = release_then_exit(now, code, std::move(acts));
  std::get<Releasing>(m_state).lost_ends_revoked = lost_ends_revoked;
  return acts;
}

Actions Contender::recontend(int64_t now, Actions acts) {
  Waiting w;
  w.began = now;
  // We may still hold the lease we lost contact with: a signal before the
  // next answer releases it.
  w.maybe_owner = true;
  m_state = std::move(w);
  acts.push_back(action::Log{LogLevel::info, "contending for " + m_config.mutex + " again"});
  if (m_in_flight) {
    waiting().try_at = now; // after the reply in flight
    return acts;
  }
  return call(now, Op::acquire, std::move(acts));
}

// CMD and all it left are gone, within the lease.
Actions Contender::after_all_gone(int64_t now, Actions acts) {
  if (m_config.mode == ContenderConfig::Mode::step) return keep_lease(now, std::move(acts));
  if (m_config.mode != ContenderConfig::Mode::run) return after_run(now, std::move(acts));
  return hold_or_release(now, std::move(acts));
}

Actions Contender::after_run(int64_t now, Actions acts) {
  using Mode = ContenderConfig::Mode;
  using R = ContenderConfig::Restart;
  int code = m_child_code;
  bool lead = m_config.mode == Mode::lead;
  if (lead) m_failed_runs = code == 0 ? 0 : m_failed_runs + 1;
  bool limit = lead && code != 0 && m_config.restart != R::never && m_config.max_restarts &&
               m_failed_runs > *m_config.max_restarts;
  bool last_run = lead ? m_config.restart == R::never ||
                             (m_config.restart == R::on_failure && code == 0) || limit
                       : m_config.max_runs && m_runs >= *m_config.max_runs;
  // Stopped between runs: CMD had exited and would have run again, so
  // simba ends by the signal (128+N), as when the signal comes during the
  // restart delay. Stopped while CMD ran: CMD's status, the forwarded
  // signal's answer.
  if (m_shutdown && !last_run && owner().stopped_after_exit) code = 128 + m_stop_signal;
  if (m_shutdown || last_run) {
    if (limit && !m_shutdown)
      acts.push_back(action::Log{
          LogLevel::warning, "the command failed " + std::to_string(m_failed_runs) +
                                 " times in a row; --max-restarts " +
                                 std::to_string(*m_config.max_restarts) + " reached"});
    acts.push_back(action::Log{LogLevel::info, "releasing " + m_config.mutex});
    return release_then_exit(now, code, std::move(acts));
  }
  Owner& o = owner();
  o.stage = Phase::owning;
  o.kill_at.reset();
  if (lead && code != 0) {
    // Others may wait: ask (one read), then hand over or restart.
    o.look_at = now;
    return guard_if_due(now, std::move(acts));
  }
  if (lead) return restart_in_place(now, std::move(acts));
  if (!m_config.fixed_rate) o.next_start_at = now + m_config.every_ms;
  return acts;
}

// --min-hold: keep the lease until acquired_at + D (backend clock), then
// exit at once. The backend's now is estimated from the last reply.
Actions Contender::hold_or_release(int64_t now, Actions acts) {
  Owner& o = owner();
  int64_t backend_now = m_last_backend_now + (now - m_last_reply_at);
  int64_t remaining = o.lease.acquired_at + m_config.min_hold_ms - backend_now;
  if (m_config.min_hold_ms <= 0 || remaining <= 0) {
    return release_then_exit(now, m_child_code, std::move(acts));
  }
  return hold_for(now, remaining, std::move(acts),
                  "holding " + m_config.mutex + " for --min-hold, " + format_duration(remaining) +
                      " more");
}

// --min-hold, and the lease a step or acquire keeps: the lease is marked as
// only held, for `hold_ms` from the backend's now. With a call in flight the
// hold waits for its reply (whose handler comes back here).
Actions Contender::hold_for(int64_t now, int64_t hold_ms, Actions acts, std::string note) {
  Owner& o = owner();
  o.holding = true;
  o.guard_at.reset();
  if (m_in_flight) return acts;
  o.hold_sent = true;
  if (!note.empty()) acts.push_back(action::Log{LogLevel::verbose, std::move(note)});
  return call_with(now, Op::hold, hold_ms, 0, std::move(acts));
}

} // namespace simba::core
