#include "core/timing_limits.hpp"

#include "core/duration.hpp"
#include "core/error.hpp"

#include <algorithm>

namespace simba::core {

int64_t usable_life_ms(int64_t ttl_ms, int64_t transition_ms, int64_t kill_after_ms) {
  return ttl_ms + transition_ms - safety_margin(ttl_ms, transition_ms) - kill_after_ms;
}

int64_t min_ttl_ms(int64_t transition_ms, int64_t kill_after_ms, int64_t retry_ms) {
  int64_t need = 2 * retry_ms;
  int64_t ttl = std::max<int64_t>(retry_ms, 1);
  // The life grows with the ttl (by 99% of it): add what is missing until
  // it suffices. Each step leaves about 1% of the previous deficit.
  for (int64_t life; (life = usable_life_ms(ttl, transition_ms, kill_after_ms)) < need;) {
    ttl += need - life;
  }
  return ttl;
}

namespace {

// A duration the user can pass back as is: parse_duration reads "1507ms",
// not format_duration's "1.507s".
std::string as_option_value(int64_t ms) {
  return ms % 1000 == 0 ? format_duration(ms) : std::to_string(ms) + "ms";
}

} // namespace

void check_timing_room(const ContenderConfig& c) {
  int64_t least = min_ttl_ms(c.transition_ms, c.kill_after_ms, c.retry_ms);
  if (c.ttl_ms >= least) return;
  throw UsageError("--ttl " + format_duration(c.ttl_ms) +
                   " leaves no room to renew the lease before its kill point (with --transition " +
                   format_duration(c.transition_ms) + " and --kill-after " +
                   format_duration(c.kill_after_ms) + "): the minimum is --ttl " +
                   as_option_value(least));
}

} // namespace simba::core
