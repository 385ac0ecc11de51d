#pragma once
// The contend state machine (the seed's MutexContendService, DESIGN §2–§4),
// sans I/O: it takes events — a backend reply, a timer, a release
// notification, CMD's exit, a signal — and returns actions — call the
// backend, start or signal CMD, move the watchdog, exit. The driver
// (cli/driver.cpp) executes the actions with real I/O; the tests drive it with
// a fake clock and a fake backend.
//
// The state is one struct per phase (Waiting, Owner, ...: m_state), each with
// only what its phase needs, plus the few fields that last across phases.
// The timing rules are ContendPeriod's (contend_period.hpp).
//
// Local times (`now` arguments, deadlines) are milliseconds on a monotonic
// clock; backend times are only ever used as differences from the backend's
// own `now` of the same reply.
#include "core/action.hpp"
#include "core/contend_period.hpp"
#include "core/lease.hpp"
#include "core/once_per.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace simba::core {

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
  int kill_signal = 15;         // SIGTERM
  bool no_wait = false;
  std::optional<int64_t> wait_timeout_ms; // --timeout
  int64_t min_hold_ms = 0;
  int conflict_exit_code = 75;
  int64_t call_timeout_ms = 2000; // upper bound of one backend call
  int64_t retry_ms = 250;         // guard retry period (DESIGN §4: <= 250 ms)
  // A waiter's acquire that failed (or got no answer) is retried after a
  // back-off: retry_ms, doubling per failure up to this, with jitter. Only
  // the waiter's: an owner's guard keeps retry_ms (its kill point decides).
  int64_t backoff_max_ms = 5000;
  // run: while waiting, the notice is given again this often (at the next
  // reply after it is due), so that a log without a terminal shows why.
  int64_t notice_every_ms = 5 * 60 * 1000;
  // run: one CMD, then release and exit. lead: contend forever, CMD runs
  // while owner (restart policy below). schedule: while owner, CMD every
  // `every_ms` (the seed's AbstractScheduler). acquire: wait and acquire
  // like run, then keep the lease (marked as only held: nothing runs under
  // it) and exit with action::Leased, no CMD, no release. step (run
  // --lease): start as the owner of a known lease (contender_id and
  // lease_token, from its handle), guard it once, run CMD like run, and
  // keep the lease at the end instead of releasing it
  // (contender_lease.cpp).
  enum class Mode { run, lead, schedule, acquire, step } mode = Mode::run;
  int slots = 1;            // --slots N: at most N holders at once (slots.hpp)
  uint64_t lease_token = 0; // step: the fencing token of the known lease
  int lease_slot = -1;      // step with --slots: the slot of the known lease
  enum class Restart { never, on_failure, always } restart = Restart::never;
  int64_t restart_delay_ms = 1000;
  // lead --max-restarts N: a failed run after N failed runs in a row of
  // this simba (a run that exits 0 starts the count again; hand-overs do
  // not) releases and exits with CMD's status. nullopt: no limit.
  std::optional<int> max_restarts;
  int64_t every_ms = 0;
  int64_t initial_delay_ms = 0;
  bool fixed_rate = true;      // else fixed-delay
  bool align = false;          // fixed-rate: ticks on multiples of every_ms (backend clock)
  std::optional<int> max_runs; // schedule: release and exit after N runs
  // run --once-per: acquire and release go with the done record (the
  // driver calls acquire_once and release_once); a refusal ends the run.
  std::optional<OncePer> once;
};

struct CallResult {
  // refused: backend::Reply::Status::refused (`error` is the whole line)
  enum class Status { ok, failed, indeterminate, refused } status = Status::failed;
  Observed observed;
  bool changed = false;
  std::string error;
  std::optional<DoneRecord> done;     // --once-per: the record as the call left it
  std::optional<int64_t> last_run_at; // a marking guard: the last run's start before it
  std::optional<int> waiters;         // Op::waiters: how many others wait; nullopt: not known
};

// Whether an acquire's (or a grant's) reply gives the lease to `contender`:
// answered, the call took or renewed it (`changed`), and it shows
// `contender` as the valid owner. `changed` is the backstop: a reply that
// took nothing but shows our id on a valid lease -- a backend's refusal
// built from our own ended lease, as the FIFO gate's once was
// (docs/safety.md) -- never starts CMD.
inline bool acquired_by(const CallResult& r, const std::string& contender) {
  return r.status == CallResult::Status::ok && r.changed &&
         r.observed.lease.owned_by(contender, r.observed.now);
}

// TERM, INT, HUP, QUIT: the signals that ask simba to stop.
bool is_stop_signal(int signo);

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
  // it). Taken only while we are contending with no call in flight (the call
  // in flight then tells us: for an owner, an acquire is a renewal).
  // Otherwise, unless we own the mutex, a call is in flight or the grant is
  // of the lease we hold (a late message: our acquire renewed it first),
  // the lease goes back at once (action::Disown with the grant's token), to
  // the next waiter: nobody else could have it until it expired.
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

  Phase phase() const;
  bool call_in_flight() const { return m_in_flight.has_value(); }
  // Owning, draining, stopping: the local deadline of the lease (else 0).
  int64_t deadline() const;

  // simba cannot go on (the driver's emergency stop): the release it makes,
  // best effort, before it lets the error through. The contender is done.
  action::Disown on_emergency();

private:
  // The state of each phase, with only what that phase needs
  // (m_state; phase() names it).
  struct Init {};
  // A series of failed or unanswered acquire replies (count 0: the backend answers).
  struct Failures {
    int count = 0;
    int64_t since = 0; // local: the first failure
    std::string last_error;
  };
  // contending (contender_waiting.cpp)
  struct Waiting {
    int64_t began = 0;                // local: start, or contending again
    std::optional<int64_t> try_at;    // the next acquire (none while one is in flight)
    std::optional<int64_t> remind_at; // run: the next still_waiting notice
    // We may hold a lease: an acquire went unanswered or came too late, or
    // (contending again) the lease we lost contact with may still be ours.
    bool maybe_owner = false;
    // lead after a hand-over: no acquire of ours before this (on_notify
    // waits for it too), so that the waiter the release woke takes the mutex.
    int64_t not_before = 0;
    std::optional<int> cancel_code; // cancelled (signal, --timeout) with an acquire in flight
    bool timed_out = false;         // --timeout passed (the code is chosen at the exit)
    Failures failures;
  };
  // owning, draining, stopping: the lease is ours, or was until the loss
  // that stops CMD (contender_owning.cpp).
  struct Owner {
    Phase stage = Phase::owning; // owning, draining or stopping
    Lease lease;
    int64_t deadline = 0;            // local: the lease surely ends after this
    int64_t kill_point = 0;          // local: CMD is stopped here
    std::optional<int64_t> guard_at; // owning, draining: next guard (none while one is in flight)
    std::optional<int64_t> kill_at;  // SIGKILL due (draining, stopping, asked twice to stop)
    bool child_running = false;      // CMD itself (not what it left) runs
    std::optional<int64_t> next_start_at; // lead: restart; schedule: next run
    int64_t rate_origin = 0;              // schedule fixed-rate: first tick
    bool holding = false;                 // draining, --min-hold: CMD is done, the lease is kept
    bool hold_sent = false;               // the hold call went out
    bool phase_pending = false;           // schedule: the last run's start is to be read
    bool run_pending = false;             // schedule: a run starts once its start is recorded
    bool stopped_after_exit = false;      // lead, schedule: asked to stop once CMD had exited
    std::optional<int64_t> look_at;       // lead after a failed run: ask who waits (Op::waiters)
    // A guard outage: its failures in a row and when the first was seen
    // (one warning when it begins, one line when the backend answers).
    int guard_failures = 0;
    int64_t guard_failing_since = 0;
    // stopping after a loss: the lost event to record once CMD is gone
    // (after_loss); its exit code is CMD's, once known.
    std::optional<action::RecordLost> lost;

    // An owner's reply (acquire, guard, hold): the lease and its new times.
    void adopt(const Lease& l, const OwnerTimes& t) {
      lease = l;
      deadline = t.deadline;
      kill_point = t.kill_point;
      guard_at = t.guard_at;
    }
  };
  struct Releasing {
    uint64_t token = 0;      // see action::Call::token
    int exit_code = 0;       // once the release is answered
    bool hand_over = false;  // lead: contend again once it is answered, not exit
    // After a loss whose lost event (RecordLost::end_revoked) already asks
    // for the revoked lease's end: not asked twice.
    bool lost_ends_revoked = false;
  };
  struct Done {};

  // What an owner's loss was, for its lost event (begin_stop).
  struct LossSeen {
    LossReason reason = LossReason::gone;
    std::string by;               // taken: the owner id shown holding the mutex
    std::optional<int> exit_code; // CMD's status, when it had already ended
  };

  // The one call in flight.
  struct InFlight {
    Op op = Op::acquire;
    int64_t sent_at = 0;
    RunMark mark = RunMark::none;
  };
  // The holder an answered acquire showed, for the notices: its times are
  // aged by the local time since.
  struct SeenHolder {
    Lease lease;
    int64_t backend_now = 0;
    int64_t seen_at = 0; // local
  };

  // contender.cpp: entries shared by the phases
  Waiting& waiting() { return std::get<Waiting>(m_state); }
  const Waiting& waiting() const { return std::get<Waiting>(m_state); }
  Owner& owner() { return std::get<Owner>(m_state); }
  const Owner& owner() const { return std::get<Owner>(m_state); }
  Actions call(int64_t now, Op op, Actions acts = {});
  Actions call_with(int64_t now, Op op, int64_t ttl, int64_t transition, Actions acts);
  int64_t call_budget(int64_t now) const; // a call never runs past the kill point
  Actions on_release_reply(int64_t now, const CallResult& r);
  Actions release_then_exit(int64_t now, int code, Actions acts = {});
  Actions finish(int64_t now, int code, Actions acts = {});
  // A release or a --min-hold hold whose reply shows our lease revoked
  // although CMD and all it started were gone: its end (action::EndRevoked).
  std::optional<action::EndRevoked> revoked_after_cmd(const CallResult& r, uint64_t token) const;
  OwnerTimes owner_times(const Observed& o, int64_t sent_at) const;
  bool long_running() const {
    return m_config.mode == ContenderConfig::Mode::lead ||
           m_config.mode == ContenderConfig::Mode::schedule;
  }
  bool split_phase() const {
    return m_config.mode == ContenderConfig::Mode::acquire ||
           m_config.mode == ContenderConfig::Mode::step;
  }

  // contender_waiting.cpp
  Actions on_acquire_reply(int64_t now, const CallResult& r, int64_t sent_at);
  Actions on_cancelled_acquire(int64_t now, const CallResult& r, Actions acts);
  Actions on_acquired(int64_t now, const Observed& o, int64_t sent_at, Actions acts);
  Actions retry_acquire_later(int64_t now, int64_t delay, Actions acts = {});
  Actions on_acquire_failure(int64_t now, const CallResult& r, Actions acts);
  Actions on_acquire_refused(int64_t now, const CallResult& r);
  Actions track_backend(int64_t now, const CallResult& r);
  Actions on_busy(int64_t now, const Observed& o, Actions acts);
  bool window_closed(const CallResult& r) const; // --once-per: may not run in this window
  Action notice(int64_t now, WaitNotice::Event event, LogLevel level) const;
  void describe_holder(int64_t now, WaitNotice& n) const;
  Actions give_up(int64_t now, Actions acts = {});
  Action skipped(int64_t now, const char* reason, int64_t waited_ms) const;
  Action already_ran(const CallResult& r) const;
  Actions remind_if_due(int64_t now, Actions acts);
  Actions cancel(int64_t now, int code);
  std::string same_label(const Lease& l) const;

  // contender_owning.cpp
  Actions on_owned(int64_t now, Actions acts); // a new ownership began
  Actions start_cmd(int64_t now, Actions acts = {});
  int64_t next_tick(int64_t now) const;
  Actions on_guard_reply(int64_t now, const CallResult& r, int64_t sent_at, RunMark mark);
  Actions on_marked(int64_t now, const CallResult& r, RunMark mark, Actions acts);
  Actions plan_first_run(int64_t now, const CallResult& r, Actions acts);
  Actions on_owner_timer(int64_t now);
  Actions guard_if_due(int64_t now, Actions acts);
  Action guard_failed(int64_t now, const std::string& error);
  Actions begin_stop(int64_t now, const std::string& why, LossSeen loss, Actions acts = {});
  Actions on_owner_signal(int64_t now, int signo, bool stop, bool again);
  Actions after_loss(int64_t now, Actions acts); // CMD is gone after a loss
  Actions recontend(int64_t now, Actions acts);
  Actions after_all_gone(int64_t now, Actions acts);
  Actions after_run(int64_t now, Actions acts);       // lead, schedule: restart, next run or end
  Actions after_failed_lead_run(int64_t now, Actions acts); // lead: hand over or restart
  Actions on_waiters_reply(int64_t now, const CallResult& r);
  Actions restart_in_place(int64_t now, Actions acts);
  Actions hand_over(int64_t now, int others, Actions acts);
  Actions contend_after_hand_over(int64_t now, const CallResult& r);
  Actions hold_or_release(int64_t now, Actions acts); // run: --min-hold, then the release
  Actions hold_for(int64_t now, int64_t hold_ms, Actions acts, std::string note = {});

  // contender_lease.cpp: acquire and step (split_phase())
  Actions start_step(int64_t now);
  Actions on_step_confirmed(int64_t now, const CallResult& r, int64_t sent_at);
  Actions keep_lease(int64_t now, Actions acts);
  Actions on_keep_reply(int64_t now, const CallResult& r, int64_t sent_at);
  Actions on_split_signal(int64_t now, int signo);

  ContenderConfig m_config;
  ContendPeriod m_period;
  std::variant<Init, Waiting, Owner, Releasing, Done> m_state;
  std::optional<InFlight> m_in_flight;

  // What lasts across the phases, for the whole run of simba:
  std::optional<int64_t> m_give_up_at; // --timeout, counted from start()
  int64_t m_last_backend_now = 0;      // backend clock of the last ok reply
  int64_t m_last_reply_at = 0;         // local time of that reply
  std::optional<SeenHolder> m_holder;  // kept when contending again (lead, schedule)
  bool m_announced_wait = false;       // the waiting notice is given once
  int m_unknown_replies = 0;           // indeterminate acquire replies (--no-wait gives up)
  int m_runs = 0;                      // CMD's starts (schedule: --max-runs)
  int m_child_code = 0;                // CMD's status at its last exit
  int m_failed_runs = 0;               // lead: failed runs in a row (--max-restarts)
  bool m_shutdown = false;             // a TERM/INT/HUP/QUIT asked simba to stop (lead, schedule)
  int m_stop_signal = 0;               // the first TERM/INT/HUP/QUIT simba got (0: none)
  bool m_refused = false;              // the backend refused a guard: stop, release, exit 69
  // --once-per: the start of our window, that of the backend's now in the
  // first answered call (0: none yet). Judged in every later acquire.
  int64_t m_once_window = 0;
  std::optional<OncePer> once_judged() const; // m_config.once in our window
};

} // namespace simba::core
