// --once-per: windows and the done record's rules (once_per.hpp).
#include "core/once_per.hpp"

#include "core/duration.hpp"

#include <ctime>

namespace simba::core {

int64_t window_start(int64_t now, int64_t period_ms, int64_t offset_ms) {
  int64_t shifted = now - offset_ms;
  int64_t q = shifted / period_ms;
  if (shifted % period_ms != 0 && shifted < 0) --q; // floor, not truncation
  return q * period_ms + offset_ms;
}

WindowState judge_window(const std::optional<DoneRecord>& record, const Lease& lease, int64_t now,
                         const OncePer& o) {
  int64_t w = judged_window(now, o);
  if (!record || record->window_start < w) return WindowState::open;
  if (record->window_start > w) return WindowState::passed_over;
  if (record->finished) return record->exit_code == 0 ? WindowState::ran_ok : WindowState::failed;
  // Unfinished: its run goes on while its lease does (a revoked one too:
  // its CMD is being stopped); a lease that ended without a release was lost.
  if (!lease.free_at(now) && lease.fencing_token == record->token) return WindowState::running;
  return WindowState::failed;
}

std::string already_ran_message(const DoneRecord& r) {
  std::string where = r.host.empty() ? r.label : r.host;
  if (!r.finished)
    return "already ran in this window on " + where + " at " + format_utc(r.started_at) +
           " (lease lost; contender " + r.label + ")";
  return "already ran in this window on " + where + " at " + format_utc(r.finished_at) + " (exit " +
         std::to_string(r.exit_code) + "; contender " + r.label + ")";
}

std::string passed_over_message(int64_t window, const DoneRecord& r) {
  std::string where = r.host.empty() ? r.label : r.host;
  std::string what = r.finished ? "already ran on " + where + " at " + format_utc(r.finished_at) +
                                      " (exit " + std::to_string(r.exit_code) + "; contender " +
                                      r.label + ")"
                                : "started on " + where + " at " + format_utc(r.started_at) +
                                      " (contender " + r.label + ")";
  return "the window of " + format_utc(window) + " was passed over: a later window (" +
         format_utc(r.window_start) + ") " + what;
}

std::string late_note(const DoneRecord& r) {
  int64_t late = lateness(r);
  if (late == 0) return "";
  return "late by " + format_duration(late) + " for the window of " + format_utc(r.window_start);
}

namespace {
std::string terms(int64_t period_ms, int64_t offset_ms) {
  std::string t = "--once-per " + format_duration(period_ms);
  if (offset_ms != 0) t += " --offset " + format_duration(offset_ms);
  return t;
}
} // namespace

std::string terms_differ_message(const std::string& mutex, const DoneRecord& r, const OncePer& o) {
  return "mutex '" + mutex + "' is run with " + terms(r.period_ms, r.offset_ms) + ", not " +
         terms(o.period_ms, o.offset_ms) + " (its last run's window ends at " +
         format_utc(r.window_start + r.period_ms) + "; the first run after it sets the terms)";
}

} // namespace simba::core
