// The waiter's side of the contender (phase contending): the acquire replies,
// the back-off while the backend fails, the notices about the wait, and
// giving up (--no-wait, --timeout, a signal).
#include "core/contender.hpp"

#include "core/error.hpp"
#include "core/names.hpp"

#include <algorithm>

namespace simba::core {

Actions Contender::on_acquire_reply(int64_t now, const CallResult& r, int64_t sent_at) {
  if (!std::holds_alternative<Waiting>(m_state)) return {}; // acquires are sent while contending
  if (r.status == CallResult::Status::refused && !waiting().cancel_code)
    return on_acquire_refused(now, r);
  // Nothing here for the hot path: an answered acquire after no failure
  // adds no action.
  Actions acts = track_backend(now, r);
  bool ok = r.status == CallResult::Status::ok;
  bool ours = acquired_by(r, m_config.contender_id);
  if (ok && !ours) m_holder = SeenHolder{r.observed.lease, r.observed.now, now};
  if (waiting().cancel_code) return on_cancelled_acquire(now, r, std::move(acts));
  if (!ok) return on_acquire_failure(now, r, std::move(acts));
  if (ours) {
    // --once-per: a run that starts after its window's end says for which
    // window, and how late.
    if (m_config.once && r.done && r.done->token == r.observed.lease.fencing_token &&
        lateness(*r.done) > 0)
      acts.push_back(
          action::Log{LogLevel::info, "running " + m_config.mutex + " " + late_note(*r.done)});
    return on_acquired(now, r.observed, sent_at, std::move(acts));
  }
  waiting().maybe_owner = false;
  if (window_closed(r)) {
    bool later = r.done->window_start > m_once_window;
    acts.push_back(action::Log{LogLevel::info, later ? passed_over_message(m_once_window, *r.done)
                                                     : core::already_ran_message(*r.done)});
    acts.push_back(already_ran(r)); // the skipped event: a later window's run counts too
    return finish(now, m_config.conflict_exit_code, std::move(acts));
  }
  return on_busy(now, r.observed, std::move(acts));
}

// Cancelled (signal or --timeout) while this acquire was in flight.
Actions Contender::on_cancelled_acquire(int64_t now, const CallResult& r, Actions acts) {
  Waiting& w = waiting();
  bool maybe = r.status == CallResult::Status::indeterminate ||
               (r.status == CallResult::Status::ok &&
                r.observed.lease.owned_by(m_config.contender_id, r.observed.now));
  if (w.timed_out) {
    w.maybe_owner = w.maybe_owner || maybe;
    return give_up(now, std::move(acts)); // this reply decides the code
  }
  int code = *w.cancel_code;
  if (maybe || w.maybe_owner) return release_then_exit(now, code, std::move(acts));
  return finish(now, code, std::move(acts));
}

// The reply shows the lease ours: CMD starts, unless the reply came too late.
Actions Contender::on_acquired(int64_t now, const Observed& o, int64_t sent_at, Actions acts) {
  waiting().maybe_owner = true;
  OwnerTimes times = owner_times(o, sent_at);
  if (times.kill_point <= now) {
    // The reply came so late that the lease would have to be stopped at
    // once: renew before starting anything -- after a retry period, or a
    // backend slower than the lease would be asked in a loop.
    acts.push_back(action::Log{LogLevel::warning, "acquire reply came too late to use; renewing"});
    return retry_acquire_later(now, m_config.retry_ms, std::move(acts));
  }
  m_state = Owner{};
  owner().adopt(o.lease, times);
  acts.push_back(action::Log{long_running() ? LogLevel::info : LogLevel::verbose,
                             "acquired " + m_config.mutex + " (fencing token " +
                                 std::to_string(o.lease.fencing_token) + ")"});
  return on_owned(now, std::move(acts));
}

// A failed acquire, or one whose outcome is unknown: tried again after a
// back-off (ContendPeriod::backoff_delay), never at once; --no-wait gives up.
Actions Contender::on_acquire_failure(int64_t now, const CallResult& r, Actions acts) {
  Waiting& w = waiting();
  if (r.status == CallResult::Status::indeterminate) {
    // It may have been applied: never start CMD on it. Acquire again — for
    // the owner that is a renewal — and learn the truth.
    w.maybe_owner = true;
    if (m_config.no_wait && ++m_unknown_replies > 1) {
      // --no-wait does not wait on a backend that does not answer either.
      acts.push_back(action::Log{LogLevel::error, "backend unavailable: " + w.failures.last_error});
      return release_then_exit(now, exit_code::k_unavailable, std::move(acts));
    }
  } else if (m_config.no_wait) {
    acts.push_back(action::Log{LogLevel::error, "backend unavailable: " + w.failures.last_error});
    if (w.maybe_owner) return release_then_exit(now, exit_code::k_unavailable, std::move(acts));
    return finish(now, exit_code::k_unavailable, std::move(acts));
  }
  acts = remind_if_due(now, std::move(acts));
  int64_t delay =
      m_period.backoff_delay(w.failures.count, m_config.retry_ms, m_config.backoff_max_ms);
  return retry_acquire_later(now, delay, std::move(acts));
}

// The backend refused the acquire (an ACL, a GRANT): no back-off, since a
// retry gets the same answer; the refusal is the one error line. Nothing
// was applied, but an earlier unanswered acquire may have taken the lease.
Actions Contender::on_acquire_refused(int64_t now, const CallResult& r) {
  Actions acts{action::Log{LogLevel::error, r.error}};
  if (waiting().maybe_owner)
    return release_then_exit(now, exit_code::k_unavailable, std::move(acts));
  return finish(now, exit_code::k_unavailable, std::move(acts));
}

// Keeps count of a series of failed acquires: a warning at its first, one
// line when the backend answers again; between them, verbose lines only.
Actions Contender::track_backend(int64_t now, const CallResult& r) {
  using Event = WaitNotice::Event;
  Failures& f = waiting().failures;
  if (r.status == CallResult::Status::ok) {
    if (f.count == 0) return {};
    Actions acts;
    if (!m_config.no_wait) acts.push_back(notice(now, Event::backend_back, LogLevel::info));
    f.count = 0;
    return acts;
  }
  bool unanswered = r.status == CallResult::Status::indeterminate;
  f.last_error = unanswered ? "no answer in time (" + r.error + ")" : r.error;
  if (f.count++ == 0) {
    f.since = now;
    // --no-wait says it when it gives up (on_acquire_failure)
    if (!m_config.no_wait) return {notice(now, Event::backend_failing, LogLevel::warning)};
    return {};
  }
  return {action::Log{LogLevel::verbose, "acquire failed again (" + f.last_error + "); " +
                                             std::to_string(f.count) + " failures in a row"}};
}

// --once-per: the backend did not give us the mutex, and never will in
// our window: a later window's run has happened (whoever holds the mutex
// now), or the mutex is free and our window has run (or failed, without
// --retry-failed).
bool Contender::window_closed(const CallResult& r) const {
  if (!m_config.once || !r.done) return false;
  const Observed& o = r.observed;
  std::optional<OncePer> once = once_judged();
  WindowState s = judge_window(r.done, o.lease, o.now, *once);
  if (s == WindowState::passed_over) return true;
  if (!o.lease.free_at(o.now)) return false;
  return !may_run(s, *once);
}

// A quarantine (docs/backends/) is no holder: the backend
// may have lost a lease that still runs, and nobody may run until it
// ends. It is never the conflict code: a cron recipe maps that to 0 and
// would skip its run without a word.
static bool in_quarantine(const Lease& l, int64_t backend_now) {
  return l.quarantine && l.revoked_at(backend_now);
}

// Another contender holds the mutex (or its revoked lease runs out).
Actions Contender::on_busy(int64_t now, const Observed& o, Actions acts) {
  bool free = o.lease.free_at(o.now);
  if (m_config.no_wait && in_quarantine(o.lease, o.now)) {
    acts.push_back(notice(now, WaitNotice::Event::busy, LogLevel::error));
    return finish(now, exit_code::k_unavailable, std::move(acts));
  }
  if (m_config.no_wait) {
    if (!free) acts.push_back(notice(now, WaitNotice::Event::busy, LogLevel::info));
    acts.push_back(skipped(now, "busy", 0));
    return finish(now, m_config.conflict_exit_code, std::move(acts));
  }
  int64_t delay = free ? 0 : m_period.ensure_next_delay(o);
  if (!m_announced_wait && !free) {
    // Once: what we wait for. Shown in any log (unless -q): a CI job's log
    // without it would show nothing until the exit.
    m_announced_wait = true;
    acts.push_back(notice(now, WaitNotice::Event::waiting, LogLevel::info));
  } else {
    acts = remind_if_due(now, std::move(acts));
  }
  return retry_acquire_later(now, delay, std::move(acts));
}

Actions Contender::retry_acquire_later(int64_t now, int64_t delay, Actions acts) {
  waiting().try_at = now + std::max<int64_t>(delay, 0);
  return acts;
}

// run: the notice again every notice_every_ms of waiting (at the first reply
// after it is due: with the holder of that moment). Not for lead and
// schedule: a standby waits for months, and says so once.
Actions Contender::remind_if_due(int64_t now, Actions acts) {
  if (long_running() || m_config.notice_every_ms <= 0) return acts;
  Waiting& w = waiting();
  if (!w.remind_at) w.remind_at = w.began + m_config.notice_every_ms;
  if (now < *w.remind_at) return acts;
  w.remind_at = now + m_config.notice_every_ms;
  acts.push_back(notice(now, WaitNotice::Event::still_waiting, LogLevel::info));
  return acts;
}

Action Contender::notice(int64_t now, WaitNotice::Event event, LogLevel level) const {
  const Waiting& w = waiting();
  action::Notice a;
  a.level = level;
  WaitNotice& n = a.notice;
  n.event = event;
  n.mutex = m_config.mutex;
  n.waited_ms = now - w.began;
  if (m_give_up_at && event != WaitNotice::Event::gave_up) {
    n.gives_up_in_ms = std::max<int64_t>(*m_give_up_at - now, 0);
  }
  describe_holder(now, n);
  if (w.failures.count > 0) {
    n.error = w.failures.last_error;
    n.failing_ms = now - w.failures.since;
    n.failures = w.failures.count;
    n.retry_max_ms = std::max(m_config.backoff_max_ms, m_config.retry_ms);
  }
  return a;
}

// The holder as last seen (it has most likely renewed since), its times aged
// by the local time since.
void Contender::describe_holder(int64_t now, WaitNotice& n) const {
  if (!m_holder) return;
  const Lease& h = m_holder->lease;
  int64_t seen = m_holder->backend_now;
  int64_t backend_now = seen + (now - m_holder->seen_at);
  if (h.free_at(seen) || h.owned_by(m_config.contender_id, seen)) return;
  n.revoked = h.revoked_at(seen);
  n.quarantine = n.revoked && h.quarantine;
  n.holder_id = h.owner_id;
  n.holder_has_our_label = !same_label(h).empty();
  if (!n.revoked) n.held_ms = backend_now - h.acquired_at;
  n.free_in_ms = std::max<int64_t>(h.transition_at - backend_now, 0);
}

// --timeout passed: 69 if the backend is failing (its error says why) or
// was last seen in quarantine, else the conflict code, with the holder
// last seen.
Actions Contender::give_up(int64_t now, Actions acts) {
  Waiting& w = waiting();
  w.timed_out = true;
  if (m_in_flight) {
    w.cancel_code = m_config.conflict_exit_code; // the reply decides (on_acquire_reply)
    return acts;
  }
  bool failing =
      w.failures.count > 0 || (m_holder && in_quarantine(m_holder->lease, m_holder->backend_now));
  int code = failing ? exit_code::k_unavailable : m_config.conflict_exit_code;
  LogLevel level = failing ? LogLevel::error : LogLevel::info;
  acts.push_back(notice(now, WaitNotice::Event::gave_up, level));
  // A failing backend would not take the event either.
  if (!failing) acts.push_back(skipped(now, "timeout", now - w.began));
  if (w.maybe_owner) return release_then_exit(now, code, std::move(acts));
  return finish(now, code, std::move(acts));
}

// The skipped event's budget: short, it only tells the history, and the
// exit waits for it; never more than an ordinary call's.
constexpr int64_t k_skipped_record_timeout_ms = 1000;

// The skipped event of a waiter that gives up (--no-wait, --timeout): the
// holder its notices name, as last seen; how long it waited (--timeout).
Action Contender::skipped(int64_t now, const char* reason, int64_t waited_ms) const {
  action::RecordSkipped s;
  s.reason = reason;
  WaitNotice n;
  describe_holder(now, n);
  s.by = n.holder_id;
  s.held_ms = n.held_ms;
  if (!n.holder_id.empty()) s.token = m_holder->lease.fencing_token;
  s.waited_ms = waited_ms;
  s.timeout_ms = std::min(m_config.call_timeout_ms, k_skipped_record_timeout_ms);
  return s;
}

// --once-per: the window ran already; who ran it, since when, and how it
// ended, from the done record.
Action Contender::already_ran(const CallResult& r) const {
  const DoneRecord& d = *r.done;
  action::RecordSkipped s;
  s.reason = "already-ran";
  s.by = d.label;
  s.token = d.token;
  s.held_ms = std::max<int64_t>(0, r.observed.now - d.started_at);
  if (d.finished) s.exit_code = d.exit_code;
  s.timeout_ms = std::min(m_config.call_timeout_ms, k_skipped_record_timeout_ms);
  return s;
}

// For the person who gave two processes one --contender-id: the holder
// with our label is another process, not us.
std::string Contender::same_label(const Lease& l) const {
  bool ours = !m_config.label.empty() && label_of(l.owner_id) == m_config.label;
  return ours ? " (another simba with --contender-id " + m_config.label + ")" : "";
}

// A signal while contending: nothing to stop; the reply in flight, if any,
// decides whether something must be released.
Actions Contender::cancel(int64_t now, int code) {
  Waiting& w = waiting();
  w.timed_out = false; // a signal decides now, not --timeout
  if (m_in_flight) {
    w.cancel_code = code;
    return {};
  }
  if (w.maybe_owner) return release_then_exit(now, code);
  return finish(now, code);
}

} // namespace simba::core
