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
  if (!record || record->window_start != window_start(now, o)) return WindowState::open;
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
