// schedule: the first run of a leadership (schedule_phase.hpp).
#include "core/schedule_phase.hpp"

#include "core/once_per.hpp"

#include <algorithm>

namespace simba::core {

SchedulePlan plan_schedule(std::optional<int64_t> last_run, int64_t now, int64_t every_ms,
                           bool align, int64_t initial_delay_ms) {
  SchedulePlan p;
  if (align) {
    // Only ticks on multiples: the current one, if it was missed in a
    // hand-over (the run before it is the last one recorded), else the next.
    p.origin = window_start(now, every_ms, 0);
    bool missed = last_run && *last_run < p.origin && *last_run >= p.origin - every_ms;
    p.first_run_at = missed ? now : p.origin + every_ms;
  } else if (last_run) {
    p.origin = *last_run;
    p.first_run_at = std::max(*last_run + every_ms, now);
  } else {
    p.origin = now + initial_delay_ms;
    p.first_run_at = now;
  }
  p.first_run_at = std::max(p.first_run_at, now + initial_delay_ms); // (not with --align)
  return p;
}

} // namespace simba::core
