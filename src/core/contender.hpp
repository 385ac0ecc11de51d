#pragma once
// The contend state machine (the seed's MutexContendService, DESIGN §2–§4),
// sans I/O: it takes events — a backend reply, a timer, a release
// notification, CMD's exit, a signal — and returns actions — call the
// backend, start or signal CMD, move the watchdog, exit. The driver
// (cli/driver.cpp) executes the actions with real I/O; the tests drive it with
// a fake clock and a fake backend.
//
// Local times (`now` arguments, deadlines) are milliseconds on a monotonic
// clock; backend times are only ever used as differences from the backend's
// own `now` of the same reply.
#include "core/contend_period.hpp"
#include "core/lease.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace simba::core {

// hold: the guard that keeps the lease for --min-hold once CMD is done
// (no transition; the backend marks the lease as only held).
enum class Op { acquire, guard, hold, release };

struct ContenderConfig {
  std::string mutex;
  // The owner id the backend stores and compares: unique per simba process
  // (names.hpp: make_owner_id). `label` is the user's --contender-id (or
  // pid@host), for people and for CMD's environment; never compared.
  std::string contender_id;
  std::string label;
  int64_t ttl_ms = 10000;
  int64_t transition_ms = 2000;
  int64_t kill_after_ms = 1000; // < transition_ms
  int kill_signal = 15;          // SIGTERM
  bool no_wait = false;
  std::optional<int64_t> wait_timeout_ms; // --timeout
  int64_t min_hold_ms = 0;
  int conflict_exit_code = 75;
  int64_t call_timeout_ms = 2000;  // upper bound of one backend call
  int64_t retry_ms = 250;          // guard retry period (DESIGN §4: <= 250 ms)
  // A waiter's acquire that failed (or got no answer) is retried after a
  // back-off: retry_ms, doubling per failure up to this, with jitter. Only
  // the waiter's: an owner's guard keeps retry_ms (its kill point decides).
  int64_t backoff_max_ms = 5000;
  // run: while waiting, the notice is given again this often (at the next
  // reply after it is due), so that a log without a terminal shows why.
  int64_t notice_every_ms = 5 * 60 * 1000;
  // run: one CMD, then release and exit. lead: contend forever, CMD runs
  // while owner (restart policy below). schedule: while owner, CMD every
  // `every_ms` (the seed's AbstractScheduler).
  enum class Mode { run, lead, schedule } mode = Mode::run;
  enum class Restart { never, on_failure, always } restart = Restart::never;
  int64_t restart_delay_ms = 1000;
  int64_t every_ms = 0;
  int64_t initial_delay_ms = 0;
  bool fixed_rate = true;       // else fixed-delay
  std::optional<int> max_runs;  // schedule: release and exit after N runs
};

// Safety margin of DESIGN §4: 2 ms + 1% of (ttl + transition).
int64_t safety_margin(int64_t ttl_ms, int64_t transition_ms);

// What a waiter tells about its wait, for the log to word (text) or to
// carry as fields (JSON): the mutex, its holder, how long it waited, the
// backend's trouble. Times are durations; the log turns them into clock
// times (core knows no clock but the monotonic one it is given).
struct WaitNotice {
  enum class Event {
    waiting,          // the wait begins (and the holder at that moment)
    still_waiting,    // run: again every notice_every_ms
    gave_up,          // --timeout passed
    busy,             // --no-wait found the mutex held
    backend_failing,  // the first failed (or unanswered) acquire of a series
    backend_back,     // the first answer after a series of failures
  };
  Event event = Event::waiting;
  std::string mutex;
  std::string holder_id;          // owner id of the holder last seen; empty: none
  bool holder_has_our_label = false; // another simba given our --contender-id
  bool revoked = false;           // the lease seen was revoked (release --force)
  std::optional<int64_t> held_ms; // how long the holder has held it, now
  int64_t free_in_ms = 0;         // revoked: until the mutex is free
  int64_t waited_ms = 0;          // since the wait began
  std::optional<int64_t> gives_up_in_ms; // --timeout: what is left
  std::string error;              // the backend's last error, while it fails
  int64_t failing_ms = 0;         // how long it has failed
  int failures = 0;               // failed tries in this series
  int64_t retry_max_ms = 0;       // backend_failing: the back-off's cap
};

struct Action {
  enum class Kind {
    call,            // call the backend: `op`, bounded by `timeout_ms`; then on_reply
    start_child,     // start CMD with `lease`; the watchdog armed at `deadline`
    set_deadline,    // move the watchdog to `deadline` (local ms)
    signal_child,    // forward `signo` to CMD's process group
    signal_all,      // `signo` to CMD's group and every descendant (stop sequence)
    exit,            // exit simba with `code` (nothing held, nothing running);
                     // `signo` != 0: end by that signal instead (see finish())
    log,             // `message` at `level` (0 info, 1 verbose, 2 warning,
                     // 3 notice for a person at a terminal, 4 error); or,
                     // when `notice` is set, that notice (cli/log words it)
  };
  Kind kind;
  Op op = Op::acquire;
  int64_t timeout_ms = 0;
  int64_t ttl_ms = 0;        // for call: the ttl/transition to ask for
  int64_t transition_ms = 0;
  // guard and release: only the lease with this fencing token (and our
  // owner id); 0 for a release after an acquire whose answer never came
  // (its token is unknown): whatever lease our id holds.
  uint64_t token = 0;
  Lease lease;
  int64_t deadline = 0;
  int signo = 0;
  int code = 0;
  int level = 0;
  std::string message;
  std::optional<WaitNotice> notice;
};

using Actions = std::vector<Action>;

struct CallResult {
  enum class Status { ok, failed, indeterminate } status = Status::failed;
  Observed observed;
  bool changed = false;
  std::string error;
};

class Contender {
public:
  enum class Phase {
    init,       // not started
    contending, // trying to acquire, or waiting to try again
    owning,     // CMD runs; guarding
    draining,   // CMD exited; stopping what it left before the release
    stopping,   // lease lost (or about to be): stopping CMD
    releasing,  // release in flight
    done,       // exit action emitted
  };

  Contender(ContenderConfig config, ContendPeriod period);

  Actions start(int64_t now);
  // The reply to the one call in flight. `now` is when it arrived.
  Actions on_reply(int64_t now, const CallResult& result);
  // The driver calls this when now >= wake_at().
  // (In lead and schedule modes, owning without CMD is normal: between
  // restarts and runs.)
  Actions on_timer(int64_t now);
  // A release notification (the mutex may be free).
  Actions on_notify(int64_t now);
  // A release handed the mutex over to us (a waiter): `r` is what our own
  // acquire would have answered, had we sent it at `sent_at` (a local time
  // no later than the backend's `now` in `r`: the deadline is counted from
  // it). Ignored unless we are contending with no call in flight (the call
  // in flight then tells us: for an owner, an acquire is a renewal).
  Actions on_grant(int64_t now, const CallResult& r, int64_t sent_at);
  // CMD itself exited with `shell_code` (128+N for a signal);
  // `leftovers` says whether anything it started is still alive.
  Actions on_child_exit(int64_t now, int shell_code, bool leftovers);
  // CMD and everything it left are gone.
  Actions on_all_gone(int64_t now);
  // A signal to simba (INT, TERM, HUP, QUIT, USR1, USR2, WINCH).
  Actions on_signal(int64_t now, int signo);

  // When the driver must call on_timer next; nullopt: only other events.
  std::optional<int64_t> wake_at() const;

  Phase phase() const { return m_phase; }
  bool call_in_flight() const { return m_in_flight.has_value(); }
  // Local deadline of the current lease (valid while owning/draining).
  int64_t deadline() const { return m_deadline; }
  const Lease& lease() const { return m_lease; }

private:
  Actions call(int64_t now, Op op, Actions acts = {});
  Actions call_with(int64_t now, Op op, int64_t ttl, int64_t transition, Actions acts);
  Actions on_acquire_reply(int64_t now, const CallResult& r);
  Actions on_guard_reply(int64_t now, const CallResult& r);
  Actions begin_stop(int64_t now, const std::string& why, Actions acts = {});
  Actions finish(int64_t now, int code, Actions acts = {});
  Actions after_all_gone(int64_t now, Actions acts);
  Actions retry_acquire_later(int64_t now, int64_t delay, Actions acts = {});
  Actions on_acquire_failure(int64_t now, const CallResult& r, Actions acts);
  Actions track_backend(int64_t now, const CallResult& r);
  Actions on_busy(int64_t now, const Observed& o, Actions acts);
  void see_holder(int64_t now, const Observed& o);
  Action notice(int64_t now, WaitNotice::Event event, int level) const;
  Actions give_up(int64_t now, Actions acts = {});
  Actions remind_if_due(int64_t now, Actions acts);
  Actions cancel(int64_t now, int code);
  Actions release_then_exit(int64_t now, int code, Actions acts = {});
  Actions guard_if_due(int64_t now, Actions acts);
  Actions start_cmd(int64_t now, Actions acts = {});
  Actions on_owned(int64_t now, Actions acts);  // a new ownership began
  Actions after_loss(int64_t now, Actions acts); // CMD is gone after a loss
  Actions recontend(int64_t now, Actions acts);
  std::string same_label(const Lease& l) const;
  bool long_running() const { return m_config.mode != ContenderConfig::Mode::run; }
  int64_t next_tick(int64_t now) const;
  // Takes the new local deadline from an owner's reply to a call sent at
  // m_sent_at.
  void adopt_lease(const Observed& o);
  // The local time before which the lease in `o` surely has not ended, for
  // a request sent at `sent_at`.
  int64_t local_deadline(const Observed& o, int64_t sent_at) const;
  int64_t kill_point() const { return m_deadline - m_config.kill_after_ms; }
  int64_t call_budget(int64_t now) const; // a call never runs past the kill point

  ContenderConfig m_config;
  ContendPeriod m_period;
  Phase m_phase = Phase::init;

  std::optional<Op> m_in_flight;
  int64_t m_sent_at = 0;
  std::optional<int> m_cancel_code; // cancelled while a call was in flight

  Lease m_lease;              // last lease we owned
  bool m_maybe_owner = false; // an acquire may have been applied (indeterminate or owned)
  int64_t m_deadline = 0;     // local: the lease surely ends after this
  std::optional<int64_t> m_guard_at; // local: next guard (none while one is in flight)
  std::optional<int64_t> m_try_at;   // contending: next acquire
  std::optional<int64_t> m_give_up_at; // --timeout
  std::optional<int64_t> m_kill_at;    // stopping/draining: SIGKILL
  int64_t m_last_backend_now = 0;      // backend clock of the last ok reply
  int64_t m_last_reply_at = 0;         // local time of that reply

  int m_child_code = 0;  // CMD's status once it exited
  bool m_child_running = false;
  int m_exit_after_release = 0;
  uint64_t m_release_token = 0; // see Action::token
  bool m_hold_sent = false;
  std::optional<int64_t> m_next_start_at; // lead: restart; schedule: next run
  int64_t m_rate_origin = 0;              // schedule fixed-rate: first tick
  int m_runs = 0;
  bool m_shutdown = false;      // a TERM/INT/HUP/QUIT asked simba to stop (lead, schedule)
  int m_stop_signal = 0;        // the first TERM/INT/HUP/QUIT simba got (0: none)
  int m_unknown_replies = 0;    // indeterminate acquire replies (--no-wait gives up)
  bool m_announced_wait = false; // the waiting notice was given
  int64_t m_wait_began = 0;      // local: this wait (start, or contending again)
  std::optional<int64_t> m_remind_at; // run, waiting: the next still_waiting notice
  bool m_timed_out = false;      // --timeout passed (the code is chosen at the exit)
  // The holder the last ok acquire reply showed, and when (local).
  Lease m_holder;
  int64_t m_holder_seen_backend_now = 0;
  int64_t m_holder_seen_at = 0;
  bool m_holder_known = false;
  // A series of failed or unanswered acquire replies (0: the backend answers).
  int m_failures = 0;
  int64_t m_failing_since = 0;
  std::string m_last_error;
  bool m_holding = false; // --min-hold: CMD is done, the lease is kept until acquired_at + D
};

} // namespace simba::core
