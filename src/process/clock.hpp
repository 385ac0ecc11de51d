#pragma once
#include <cstdint>
#include <ctime>

namespace simba::process {

// Milliseconds on CLOCK_BOOTTIME: monotonic, and it keeps counting during
// suspend, so a deadline computed on it never silently stretches.
inline int64_t boottime_ms() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

} // namespace simba::process
