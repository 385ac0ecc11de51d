#pragma once
// --once-per: windows on the backend's clock and the rules of the done
// record (docs/recipes.md, cron). Pure: the SQLite backend decides with
// these functions inside its transaction, the Redis scripts mirror them
// (lua/acquire_once.lua), and the contender reads a refusal with them.
#include "core/lease.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace simba::core {

struct OncePer {
  int64_t period_ms = 0; // > 0
  int64_t offset_ms = 0; // 0 <= offset < period
  bool retry_failed = false;
  // The window a contender is judged in, its start: the window of the
  // backend's now in the contender's first answered call (README "Once per
  // window"), so that a wait past the window's end does not move it. 0: the
  // window of the backend's now (a contender's first call).
  int64_t window = 0;
};

// The record of the last run of a mutex under --once-per, written by the
// backend: at the acquire that starts the run (unfinished) and at its
// release (finished). Times are the backend's epoch milliseconds.
struct DoneRecord {
  int64_t window_start = 0;
  std::string label; // the runner's --contender-id (or pid@host)
  std::string host;
  uint64_t token = 0; // the run's lease
  int64_t started_at = 0;
  bool finished = false; // released; otherwise running, or its lease was lost
  int exit_code = 0;     // when finished
  int64_t finished_at = 0;
  // The run's --once-per and --offset: the terms every contender of the
  // mutex must share (0: unknown, a record of an older simba).
  int64_t period_ms = 0;
  int64_t offset_ms = 0;
};

// The start of the window that holds `now`: floor((now - offset) / period)
// * period + offset, also for times before the epoch.
int64_t window_start(int64_t now, int64_t period_ms, int64_t offset_ms);
inline int64_t window_start(int64_t now, const OncePer& o) {
  return window_start(now, o.period_ms, o.offset_ms);
}

// The window a contender is judged in at `now` (OncePer::window).
inline int64_t judged_window(int64_t now, const OncePer& o) {
  return o.window != 0 ? o.window : window_start(now, o);
}

enum class WindowState {
  open,    // no run in this window yet (no record, or an older window's)
  ran_ok,  // a run of this window ended with exit 0
  failed,  // a run of this window failed: non-zero exit, or its lease was lost
  running, // a run of this window still holds the lease
  // A later window's run has happened: this window never runs (running it
  // now would run the job out of order, after a run that did it already).
  passed_over,
};

// The contender's window (judged_window), judged from the record and the
// lease as they stand at `now`.
WindowState judge_window(const std::optional<DoneRecord>& record, const Lease& lease, int64_t now,
                         const OncePer& o);

// Whether a contender may start a run in a window in state `s`.
inline bool may_run(WindowState s, const OncePer& o) {
  return s == WindowState::open || (s == WindowState::failed && o.retry_failed);
}

// Whether the record's run had other terms (--once-per, --offset) than `o`
// while its window lasts at `now`: then no run starts (exit 64, as --slots
// N refuses another N), since each period's record would replace the
// other's and every period would run (issue 36). Once the recorded window
// has ended, the next run's terms replace it (a changed schedule).
inline bool terms_differ(const DoneRecord& r, const OncePer& o, int64_t now) {
  return r.period_ms > 0 && (r.period_ms != o.period_ms || r.offset_ms != o.offset_ms) &&
         now < r.window_start + r.period_ms;
}

// "mutex 'M' is run --once-per 1h (--offset 30m), not --once-per 1d ...".
std::string terms_differ_message(const std::string& mutex, const DoneRecord& r, const OncePer& o);

// "already ran in this window on <host> at <time> (exit N)", times in UTC;
// only of the run of the contender's own window.
std::string already_ran_message(const DoneRecord& r);

// "the window of <T> was passed over: a later window (<T2>) already ran on
// <host> at <time> ...": `window` is the contender's, `r` a later one's run.
std::string passed_over_message(int64_t window, const DoneRecord& r);

// How late the record's run started after its window's end (0: in time).
inline int64_t lateness(const DoneRecord& r) {
  int64_t end = r.window_start + r.period_ms;
  return r.period_ms > 0 && r.started_at > end ? r.started_at - end : 0;
}

// "late by <D> for the window of <T>" of a run that started after its
// window had ended; "" of one in time.
std::string late_note(const DoneRecord& r);

} // namespace simba::core
