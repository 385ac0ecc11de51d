#pragma once
// What the contender asks of the driver (actions): call the backend, start or
// signal CMD, move the watchdog, log, record a loss in the history, end a
// lease revoked once CMD was done, exit. Each action is a small
// struct that carries only what its kind needs; `Action` is one of them.
#include "core/lease.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace simba::core {

// hold: the guard that keeps the lease for --min-hold once CMD is done
// (no transition; the backend marks the lease as only held). waiters: a
// read of the mutex's queue (status's), nothing written: a lead whose run
// failed asks whether others wait before it restarts (CallResult::waiters).
enum class Op { acquire, guard, hold, release, waiters };

// schedule: what a guard also does with the start of the mutex's last run
// (Backend::guard_mark): nothing, read it (a new leader plans its first
// run), or record now (a run starts once it is answered).
enum class RunMark { none, read, record };

// In this order cli::Log::at takes them as numbers.
enum class LogLevel {
  info,
  verbose, // only with -v
  warning,
  notice, // for a person: only when stderr is a terminal, or with -v
  error,  // even with -q
};

// What a waiter tells about its wait, for the log to word (text) or to
// carry as fields (JSON): the mutex, its holder, how long it waited, the
// backend's trouble. Times are durations; the log turns them into clock
// times (core knows no clock but the monotonic one it is given).
struct WaitNotice {
  enum class Event {
    waiting,         // the wait begins (and the holder at that moment)
    still_waiting,   // run: again every notice_every_ms
    gave_up,         // --timeout passed
    busy,            // --no-wait found the mutex held
    backend_failing, // the first failed (or unanswered) acquire of a series
    backend_back,    // the first answer after a series of failures
  };
  Event event = Event::waiting;
  std::string mutex;
  std::string holder_id;                 // owner id of the holder last seen; empty: none
  bool holder_has_our_label = false;     // another simba given our --contender-id
  bool revoked = false;                  // the lease seen was revoked (release --force)
  bool quarantine = false;               // revoked by a quarantine (Lease::quarantine)
  std::optional<int64_t> held_ms;        // how long the holder has held it, now
  int64_t free_in_ms = 0;                // revoked: until the mutex is free
  int64_t waited_ms = 0;                 // since the wait began
  std::optional<int64_t> gives_up_in_ms; // --timeout: what is left
  std::string error;                     // the backend's last error, while it fails
  int64_t failing_ms = 0;                // how long it has failed
  int failures = 0;                      // failed tries in this series
  int64_t retry_max_ms = 0;              // backend_failing: the back-off's cap
  int queue_position = 0;                // waiting, still_waiting: our place (1: next) in
  int queue_length = 0;                  // the queue of this length; 0: not known
};

// Why an owner lost its lease: the reason of the lost event its simba
// writes to the history once CMD is stopped (action::RecordLost).
enum class LossReason {
  revoked,   // a reply shows it revoked (release --force)
  taken,     // a reply shows another owner (or our id with another token)
  gone,      // a reply shows no lease: it ran out there, or the backend lost it (quarantine)
  unrenewed, // no renewal by the kill point: the backend did not answer in time, or simba was
             // stopped
  refused,   // the backend refused the renewal for want of a permission
};

inline const char* loss_reason_name(LossReason r) {
  switch (r) {
  case LossReason::revoked: return "revoked";
  case LossReason::taken: return "taken";
  case LossReason::gone: return "gone";
  case LossReason::unrenewed: return "unrenewed";
  case LossReason::refused: return "refused";
  }
  return "?";
}

namespace action {

// Call the backend, bounded by `timeout_ms`; its reply goes to
// Contender::on_reply (one call at a time).
struct Call {
  Op op = Op::acquire;
  int64_t timeout_ms = 0;
  int64_t ttl_ms = 0; // acquire, guard: the lease to ask for; hold: how long
  int64_t transition_ms = 0;
  // guard, hold, release: only the lease with this fencing token (and our
  // owner id); 0 for a release after an acquire whose answer never came
  // (its token is unknown): whatever lease our id holds.
  uint64_t token = 0;
  RunMark mark = RunMark::none; // guard: see RunMark
  // guard: a step's first (Backend::begin_step): only of a lease marked as
  // only held, so that two steps of one lease never run at once.
  bool step_start = false;
  // release: the code simba exits with (CMD's status after a run), which
  // --once-per records in the done record.
  int exit_code = 0;
  // acquire --once-per: the contender's window (OncePer::window; 0 until a
  // reply gave the backend's now).
  int64_t once_window = 0;
};

// Give back a lease the contender does not keep: a release at once, best
// effort, whose reply nobody waits for (on_reply is not called). `token` as
// in Call.
struct Disown {
  uint64_t token = 0;
  int64_t timeout_ms = 0;
};

// The owner that lost its lease says so in the history, once CMD and all it
// started are gone (never otherwise: an ordinary run and a hand-over make no
// such call): one backend call, best effort, bounded by `timeout_ms`, whose
// reply nobody waits for (on_reply is not called). It writes history only:
// it never changes a lease.
struct RecordLost {
  uint64_t token = 0; // the lost lease's
  LossReason reason = LossReason::gone;
  std::string by;               // taken: the owner id shown holding the mutex
  std::optional<int> exit_code; // CMD's status (128+N: stopped by signal N); none: no CMD ran
  int64_t held_ms = 0;          // from the lease's acquisition to the loss (backend clock)
  int64_t timeout_ms = 0;
  // A lease revoked by release --force (reason revoked) that this simba
  // alone ran CMD under (run, one slot): with CMD and all it started gone,
  // the driver then ends it at once (Backend::end_revoked), so that the
  // next waiter need not wait for the revoked lease's transition. Never a
  // step (its token is the job's, shared by every step), and never lead or
  // schedule: they contend again at once and would take the mutex straight
  // back ahead of the waiters that a release only wakes (SQLite).
  bool end_revoked = false;
};

// Our lease was revoked by release --force once CMD and all it started were
// already gone (the force came between CMD's exit and our release, or our
// --min-hold's hold): the release or hold found it revoked and changed
// nothing. Nothing runs under it, so it ends now (Backend::end_revoked, by
// its token), waking the waiters as a release does, instead of keeping
// them out until its transition_at. No lost event: nothing was stopped
// (the force's `forced` is its end in the history). Best effort, bounded
// by `timeout_ms`, its reply nobody waits for; just before the exit.
struct EndRevoked {
  uint64_t token = 0;
  int64_t timeout_ms = 0;
};

// A contender that does not run says why in the history, just before its
// exit: like RecordLost, one best-effort backend call bounded by
// `timeout_ms`, whose reply nobody waits for, that writes history only.
struct RecordSkipped {
  const char* reason = "";        // already-ran, busy, timeout
  std::string by;                 // the holder's owner id; already-ran: the runner's label
  uint64_t token = 0;             // the holder's lease, or the run's
  std::optional<int64_t> held_ms; // how long before now the holder took it / the run started
  int64_t waited_ms = 0;
  std::optional<int> exit_code; // already-ran: the run's, when it finished
  int64_t timeout_ms = 0;
};

// Start CMD with `lease`; the watchdog armed at `deadline` (local ms).
struct StartChild {
  Lease lease;
  int64_t deadline = 0;
};

// Move the watchdog to `deadline` (local ms).
struct SetDeadline {
  int64_t deadline = 0;
};

// Forward `signo` to CMD's process group.
struct SignalChild {
  int signo = 0;
};

// `signo` to CMD's group and every descendant (the stop sequence).
struct SignalAll {
  int signo = 0;
};

// Exit simba with `code` (nothing held, nothing running); `signo` != 0: end
// by that signal instead (see Contender::finish).
struct Exit {
  int code = 0;
  int signo = 0;
};

// acquire: the lease is kept for simba acquire to hand out; sent just
// before the Exit. `backend_now`: the backend's clock of the last reply.
struct Leased {
  Lease lease;
  int64_t backend_now = 0;
};

struct Log {
  LogLevel level = LogLevel::info;
  std::string message;
};

// A waiter's notice, which cli/log words.
struct Notice {
  LogLevel level = LogLevel::info;
  WaitNotice notice;
};

} // namespace action

using Action =
    std::variant<action::Call, action::Disown, action::StartChild, action::SetDeadline,
                 action::SignalChild, action::SignalAll, action::Exit, action::Log, action::Notice,
                 action::Leased, action::RecordLost, action::RecordSkipped, action::EndRevoked>;
using Actions = std::vector<Action>;

} // namespace simba::core
