#include "cli/driver.hpp"

#include "cli/backend_calls.hpp"
#include "cli/command.hpp"

#include "backend/wakeups.hpp"
#include "core/error.hpp"
#include "process/child.hpp"
#include "process/signals.hpp"
#include "process/watchdog.hpp"
#include "sys/clock.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <variant>

namespace simba::cli {

namespace {

class Loop {
public:
  Loop(core::Contender& c, const core::ContenderConfig& config, backend::Backend& b,
       const Command& command, const Log& log, process::Watchdog& w, bool exits_after,
       ServiceNotifier* notifier)
      : m_contender(c), m_config(config), m_backend(b), m_command(command), m_log(log), m_child(&w),
        m_watchdog(w), m_calls(b, config), m_exits_after(exits_after), m_notifier(notifier) {}

  Outcome run() {
    try {
      // The caller started the watchdog (run.cpp: supervise; acquire,
      // which starts no CMD, none).
      feed(m_contender.start(sys::boottime_ms()));
      while (!m_exit_code) poll_once();
    } catch (...) {
      emergency_stop();
      throw;
    }
    // simba exits next (not a test driving the loop in its own process)
    if (m_exits_after) m_signals.keep_blocked_at_exit();
    m_watchdog.leave(); // it goes when simba exits (see leave())
    m_calls.report();
    return {*m_exit_code, m_exit_signal, m_leased};
  }

  // simba cannot go on (fork failed, out of memory...): nothing may outlive
  // it under a lease nobody guards. Kill CMD and everything it started, wait
  // for them briefly, release (best effort), then let the error through.
  void emergency_stop() noexcept {
    try {
      if (m_started) {
        m_child.signal_all(SIGKILL, m_watchdog.pid());
        int64_t until = sys::boottime_ms() + 2000;
        process::ExitStatus ignored;
        while (m_child.descendants_alive(m_watchdog.pid()) && sys::boottime_ms() < until) {
          m_child.reap(ignored, m_watchdog.pid());
          ::poll(nullptr, 0, 10);
        }
      }
      m_calls.disown(m_contender.on_emergency());
    } catch (...) {
    }
  }

private:
  // Executes `actions` and what they lead to, up to a second backend call
  // in one turn of the loop: that call and what follows it wait in
  // m_deferred until the loop has polled (signals, timers, wake-ups) and
  // handled what it found. However the machine chains calls, simba never
  // goes from a reply to the next call without that look (a signal must not
  // wait for a backend that keeps answering).
  void feed(const core::Actions& actions) {
    std::deque<core::Action> queue(actions.begin(), actions.end());
    while (!queue.empty() && !m_exit_code) {
      if (std::holds_alternative<core::action::Call>(queue.front()) && m_called_this_turn) {
        if (!m_deferred_at) m_deferred_at = sys::boottime_ms();
        m_deferred.insert(m_deferred.end(), queue.begin(), queue.end());
        return;
      }
      core::Action a = std::move(queue.front());
      queue.pop_front();
      core::Actions more = execute(a);
      queue.insert(queue.end(), more.begin(), more.end());
    }
  }

  // After the poll: what waited for it goes on. (The machine sends no other
  // call while the deferred one is, for it, in flight.)
  void resume_deferred() {
    if (m_deferred.empty() || m_exit_code) return;
    core::Actions actions(m_deferred.begin(), m_deferred.end());
    m_deferred.clear();
    feed(actions);
  }

  core::Actions execute(const core::Action& a) {
    return std::visit([this](const auto& x) { return perform(x); }, a);
  }

  core::Actions perform(const core::action::Call& a) {
    m_called_this_turn = true;
    core::CallResult r = call(a); // `now` is when the reply came, not the send time
    // A signal that came while the call was in flight came before its
    // reply: the contender hears it first (with the call still in flight
    // for it), so that a stop wins over a reply that would start CMD
    // (an acquire, a step's first guard) and the reply's lease goes back.
    // Not after a release: the exit follows it.
    if (a.op != core::Op::release) take_signals();
    core::Actions acts = m_contender.on_reply(sys::boottime_ms(), r);
    tell_service(a.op, r);
    return acts;
  }

  // systemd (Type=notify): what this answer shows, once the contender has
  // taken it in (leader or not).
  void tell_service(core::Op op, const core::CallResult& r) {
    if (!m_notifier) return;
    using P = core::Contender::Phase;
    P p = m_contender.phase();
    m_notifier->on_answer(sys::boottime_ms(), op, r, p == P::owning || p == P::draining);
  }
  core::Actions perform(const core::action::Disown& a) {
    m_calls.disown(a);
    return {};
  }
  // After a loss, once CMD is gone: best effort, its reply only logged.
  core::Actions perform(const core::action::RecordLost& a) {
    backend::Reply r = m_calls.record_lost(a);
    if (!r.ok())
      m_log.at(int(core::LogLevel::verbose),
               "the loss of " + m_config.mutex + " is not in its history: " + r.error);
    if (a.end_revoked) end_revoked(a.token, a.timeout_ms);
    return {};
  }
  // Revoked once CMD was done: best effort, its reply only logged.
  core::Actions perform(const core::action::EndRevoked& a) {
    end_revoked(a.token, a.timeout_ms);
    return {};
  }
  // CMD and all it started are gone: the revoked lease need not keep the
  // others out any longer (action::RecordLost::end_revoked, EndRevoked).
  void end_revoked(uint64_t token, int64_t timeout_ms) {
    backend::Reply r = m_calls.end_revoked(token, timeout_ms);
    if (!r.ok())
      m_log.at(int(core::LogLevel::verbose), "the revoked lease of " + m_config.mutex +
                                                 " stays until its transition ends: " + r.error);
    else if (r.changed)
      m_log.at(int(core::LogLevel::verbose),
               "the revoked lease of " + m_config.mutex + " ended: the command is gone");
  }
  // Before a conflict exit: best effort, its reply only logged.
  core::Actions perform(const core::action::RecordSkipped& a) {
    backend::Reply r = m_calls.record_skipped(a);
    if (!r.ok())
      m_log.at(int(core::LogLevel::verbose),
               "the skipped run of " + m_config.mutex + " is not in its history: " + r.error);
    return {};
  }
  core::Actions perform(const core::action::StartChild& a) { return start_child(a); }
  core::Actions perform(const core::action::SetDeadline& a) {
    m_watchdog.set_deadline(a.deadline);
    return {};
  }
  core::Actions perform(const core::action::SignalChild& a) {
    if (m_started) m_child.signal_group(a.signo);
    return {};
  }
  core::Actions perform(const core::action::SignalAll& a) {
    if (m_started) m_child.signal_all(a.signo, m_watchdog.pid());
    return {};
  }
  core::Actions perform(const core::action::Exit& a) {
    m_exit_code = a.code;
    m_exit_signal = a.signo;
    return {};
  }
  core::Actions perform(const core::action::Log& a) {
    m_log.at(int(a.level), a.message);
    return {};
  }
  core::Actions perform(const core::action::Leased& a) {
    m_leased = a;
    return {};
  }
  // A waiter's notice says its place in the queue: one read of the queue
  // when the wait begins and at each repeat (every 5m), none on the way
  // from a release to CMD.
  core::Actions perform(const core::action::Notice& a) {
    using E = core::WaitNotice::Event;
    if (a.notice.event != E::waiting && a.notice.event != E::still_waiting) {
      m_log.notice(int(a.level), a.notice);
      return {};
    }
    core::WaitNotice n = a.notice;
    if (std::optional<backend::QueuePlace> p = wakeups().place()) {
      n.queue_position = p->position;
      n.queue_length = p->length;
    }
    m_log.notice(int(a.level), n);
    return {};
  }

  core::CallResult call(const core::action::Call& a) {
    // A deferred call keeps the end its timeout had: it never runs past the
    // kill point the machine counted it against.
    int64_t timeout = a.timeout_ms;
    if (m_deferred_at)
      timeout = std::max<int64_t>(1, timeout - (sys::boottime_ms() - *m_deferred_at));
    m_deferred_at.reset();
    return m_calls.call(a, timeout);
  }

  core::Actions start_child(const core::action::StartChild& a) {
    // The watchdog first: were simba stopped right after the spawn, CMD
    // would otherwise run with nothing to stop it at the deadline.
    m_watchdog.set_deadline(a.deadline);
    m_child_exited = false;
    try {
      m_child.spawn(m_command.path, m_command.argv, child_env(m_command, m_config, a.lease),
                    m_signals.original_mask(), a.deadline - m_config.kill_after_ms);
    } catch (const process::Child::TooLate&) {
      m_watchdog.disarm();
      // Counts as a CMD that ended past its kill point: the lease is lost.
      return m_contender.on_child_exit(sys::boottime_ms(), 128 + SIGKILL, false);
    } catch (const Error& e) {
      m_watchdog.disarm();
      m_log.warning(e.what());
      return m_contender.on_child_exit(sys::boottime_ms(), e.code(), false);
    }
    m_watchdog.set_group(m_child.pgid());
    m_started = true;
    m_started_at = sys::boottime_ms();
    m_settle_pending = true;
    return {};
  }

  // The wake-ups (backend/wakeups.hpp), asked for when first needed: an
  // uncontended run whose CMD ends at once never needs them.
  backend::Wakeups& wakeups() {
    if (!m_wakeups) m_wakeups = &m_backend.wakeups(m_config.mutex, m_config.contender_id);
    return *m_wakeups;
  }

  // The wake-ups are listened to only once they can matter: when the first
  // try found the mutex held, or when CMD has run for a while (a forced
  // release then reaches the owner at once instead of at its next guard).
  // Closing an inotify descriptor waits for an RCU grace period (milliseconds),
  // which a short uncontended run must not pay.
  static constexpr int64_t k_owner_listen_delay_ms = 200;

  std::optional<int64_t> listen_at() const {
    if (m_listening) return std::nullopt;
    using P = core::Contender::Phase;
    if (m_contender.phase() == P::contending && !m_contender.call_in_flight()) return 0;
    // (acquire owns only for its last call: nothing to listen for)
    if (m_contender.phase() == P::owning && m_config.mode != core::ContenderConfig::Mode::acquire)
      return m_started_at + k_owner_listen_delay_ms;
    return std::nullopt;
  }

  bool waiting() const { return m_contender.phase() == core::Contender::Phase::contending; }

  // The owner settles (Wakeups::settle) once CMD has run for a few
  // milliseconds: well after the hand-over that started it, and far from
  // the next one unless CMD is very short. After a shorter CMD: its place in
  // the queue goes with simba, after the release; the backend's upkeep is
  // the release's.
  static constexpr int64_t k_settle_delay_ms = 5;

  std::optional<int64_t> settle_at() const {
    if (!m_settle_pending || m_contender.phase() != core::Contender::Phase::owning)
      return std::nullopt;
    return m_started_at + k_settle_delay_ms;
  }

  void settle_if_due() {
    auto at = settle_at();
    if (!at || sys::boottime_ms() < *at) return;
    m_settle_pending = false;
    wakeups().settle();
  }

  // Tells the wake-ups our role before each poll (they set the channel up
  // again after a loss).
  void listen() {
    backend::Wakeups& w = wakeups();
    m_notify_fd = waiting() ? w.wait() : w.own();
    // e.g. a waiter that cannot use the release notification (once)
    if (std::string warning = w.take_warning(); !warning.empty()) {
      m_log.warning(warning);
      if (std::string how = w.take_detail(); !how.empty()) m_log.verbose_line(how);
    }
  }

  void maybe_listen() {
    auto at = listen_at();
    if (!at || sys::boottime_ms() < *at) return;
    m_listening = true;
    listen();
    // A release may have happened before the queueing: look once now, unless
    // the backend saw the mutex held after queueing us (a waiter). --slots:
    // always; the backends look at the mutex's marker, held while any slot
    // is, and a slot freed before the queueing woke nobody.
    bool look = !waiting() || m_config.slots > 1 || wakeups().look_after_queueing();
    if (m_notify_fd >= 0 && look) feed(m_contender.on_notify(sys::boottime_ms()));
  }

  void poll_once() {
    maybe_listen();
    if (m_exit_code) return;
    // may have been set up again, or the role changed (waiter / owner)
    if (m_listening) listen();
    // A descriptor of -1 is skipped by poll: no wake-up channel, no CMD.
    int exit_fd = m_started && !m_child_exited ? m_child.exit_fd() : -1;
    pollfd fds[3] = {{m_signals.fd(), POLLIN, 0}, {m_notify_fd, POLLIN, 0}, {exit_fd, POLLIN, 0}};
    int timeout = -1;
    auto at = m_contender.wake_at();
    if (auto l = listen_at(); l && (!at || *l < *at)) at = l;
    if (auto s = settle_at(); s && (!at || *s < *at)) at = s;
    if (m_notifier)
      if (auto w = m_notifier->wake_at(); w && (!at || *w < *at)) at = w;
    if (at) {
      int64_t left = *at - sys::boottime_ms();
      timeout = left <= 0 ? 0 : int(std::min<int64_t>(left, 60000));
    }
    if (!m_deferred.empty()) timeout = 0; // a look at the events, then on
    m_called_this_turn = false;
    int n = ::poll(fds, 3, timeout);
    if (n < 0 && errno != EINTR) throw InternalError(std::string("poll: ") + strerror(errno));
    // Overdue timers first: after simba was stopped or hung, the deadline
    // that passed meanwhile decides, not the events that queued up.
    fire_timer();
    if (m_exit_code) return;
    if (n > 0 && (fds[0].revents & POLLIN)) take_signals();
    if (m_exit_code) return;
    if (n > 0 && (fds[2].revents & POLLIN)) reap(); // CMD exited (Child::exit_fd)
    if (m_exit_code) return;
    if (n > 0 && (fds[1].revents & POLLIN)) {
      backend::Wake w = wakeups().wake();
      // Handed the mutex by the release: no acquire.
      if (w.kind == backend::Wake::Kind::grant)
        take_grant(w.grant);
      else if (w.kind == backend::Wake::Kind::look)
        feed(m_contender.on_notify(sys::boottime_ms()));
    }
    if (m_exit_code) return;
    resume_deferred();
    if (m_exit_code) return;
    fire_timer();
    if (!m_exit_code) check_all_gone();
    if (!m_exit_code) settle_if_due();
    if (m_notifier) m_notifier->on_timer(sys::boottime_ms());
  }

  // The signals pending on the signalfd, to the contender in their order.
  void take_signals() {
    for (int signo : m_signals.read_pending()) {
      if (m_exit_code) return;
      if (signo == SIGCHLD) {
        reap();
      } else if (signo != SIGCONT) {
        // A CMD that exited as the signal came counts as gone first (the
        // order of the two cannot be known): the signal is then one
        // between runs, not one forwarded to a CMD that had exited.
        if (!m_child_exited) reap();
        if (m_exit_code) return;
        if (m_notifier && core::is_stop_signal(signo)) m_notifier->on_stop();
        feed(m_contender.on_signal(sys::boottime_ms(), signo));
      }
    }
  }

  // A lease the contender does not take comes back as action::Disown.
  void take_grant(const backend::Grant& g) {
    core::CallResult r = to_call_result(g.reply);
    feed(m_contender.on_grant(sys::boottime_ms(), r, g.sent_at_ms));
    tell_service(core::Op::acquire, r);
  }

  void fire_timer() {
    if (auto at = m_contender.wake_at()) {
      int64_t now = sys::boottime_ms();
      if (now >= *at) feed(m_contender.on_timer(now));
    }
  }

  void reap() {
    if (!m_started) return;
    process::ExitStatus status;
    if (m_child.reap(status, m_watchdog.pid())) {
      m_child_exited = true;
      bool leftovers = m_child.descendants_alive(m_watchdog.pid());
      if (!leftovers) m_watchdog.disarm(); // nothing left for it to kill
      feed(m_contender.on_child_exit(sys::boottime_ms(), status.shell_code(), leftovers));
    }
  }

  // After CMD exited, what it left may die at any moment: tell the machine
  // once nothing is left.
  void check_all_gone() {
    using P = core::Contender::Phase;
    P p = m_contender.phase();
    if (!m_child_exited || (p != P::draining && p != P::stopping)) return;
    if (!m_child.descendants_alive(m_watchdog.pid())) {
      m_watchdog.disarm();
      feed(m_contender.on_all_gone(sys::boottime_ms()));
    }
  }

  core::Contender& m_contender;
  const core::ContenderConfig& m_config;
  backend::Backend& m_backend;
  const Command& m_command;
  const Log& m_log;
  process::SignalChannel m_signals;
  process::Child m_child;
  process::Watchdog& m_watchdog;
  bool m_started = false;
  bool m_child_exited = false;
  std::optional<int> m_exit_code;
  int m_exit_signal = 0;                 // end by this signal instead of exiting with m_exit_code
  backend::Wakeups* m_wakeups = nullptr; // see wakeups()
  int m_notify_fd = -1;                  // theirs, to poll
  bool m_listening = false;              // see listen_at()
  bool m_settle_pending = false;         // CMD started, settle_at() not reached yet
  BackendCalls m_calls;
  std::deque<core::Action> m_deferred;  // a call and what follows it, until after the poll (feed())
  bool m_called_this_turn = false;      // a backend call was made since the last poll
  std::optional<int64_t> m_deferred_at; // when the deferred call was put off
  int64_t m_started_at = 0;
  std::optional<core::action::Leased> m_leased; // acquire: the lease it keeps
  bool m_exits_after = false;                   // simba exits once the loop ends (drive())
  ServiceNotifier* m_notifier = nullptr;        // systemd's Type=notify (drive())
};

} // namespace

Outcome drive(core::Contender& contender, const core::ContenderConfig& config,
              backend::Backend& backend, const Command& command, const Log& log,
              process::Watchdog& watchdog, bool exits_after, ServiceNotifier* notifier) {
  return Loop(contender, config, backend, command, log, watchdog, exits_after, notifier).run();
}

} // namespace simba::cli
