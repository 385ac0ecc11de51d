#pragma once
// Helpers shared by the process tests (real processes, real signals).
#include "sys/clock.hpp"

#include <csignal>
#include <cstdint>
#include <ctime>
#include <string>
#include <unistd.h>
#include <vector>

namespace simba::test {

// Microseconds on the watchdog's clock (CLOCK_BOOTTIME).
inline int64_t boottime_us() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

inline sigset_t current_mask() {
  sigset_t m;
  sigprocmask(SIG_BLOCK, nullptr, &m);
  return m;
}

inline std::vector<std::string> base_env() { return {"PATH=/usr/local/bin:/usr/bin:/bin"}; }

// Polls `pred` every 2 ms for up to `ms`.
template <class Pred> bool wait_until(Pred pred, int ms) {
  int64_t until = sys::boottime_ms() + ms;
  while (sys::boottime_ms() < until) {
    if (pred()) return true;
    usleep(2000);
  }
  return pred();
}

} // namespace simba::test
