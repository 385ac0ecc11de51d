#pragma once
// schedule: its phase across hand-overs, and --align. Each run's start is
// recorded with the mutex (Backend::guard_mark); a new leader reads the
// last one and plans its first run from it instead of running at once.
// Times are the backend's epoch milliseconds. Pure.
#include <cstdint>
#include <optional>

namespace simba::core {

struct SchedulePlan {
  int64_t first_run_at = 0; // when the first run of this leadership starts
  int64_t origin = 0;       // fixed-rate: ticks fall on origin + k * every
};

// `last_run`: the start of the last run any leader made (nullopt: none
// recorded). Without --align the ticks keep the last run's phase: the next
// is last_run + every (at once if that has passed), and none known runs at
// once. With --align they fall on multiples of `every`: the next one, or
// at once when the current one was missed in a hand-over (the last run
// recorded is the one of the tick before).
// --initial-delay puts the first run no sooner than now + that delay.
SchedulePlan plan_schedule(std::optional<int64_t> last_run, int64_t now, int64_t every_ms,
                           bool align, int64_t initial_delay_ms);

} // namespace simba::core
