#pragma once
// sys/: the few operating-system facts that backend/ and process/ both
// need, so that neither has to include the other (README.md). This one:
// the clock.
#include <cstdint>
#include <ctime>

namespace simba::sys {

// Milliseconds on CLOCK_BOOTTIME: monotonic, and it keeps counting during
// suspend, so a deadline computed on it never silently stretches. The one
// clock simba uses for deadlines, timers and call budgets alike.
inline int64_t boottime_ms() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// The same clock in nanoseconds, for budgets finer than a millisecond.
inline int64_t boottime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Milliseconds since the epoch on the wall clock: for display only (it
// steps), never for a deadline.
inline int64_t wall_ms() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

} // namespace simba::sys
