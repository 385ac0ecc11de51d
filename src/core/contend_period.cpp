#include "core/contend_period.hpp"

#include <algorithm>

namespace simba::core {

int64_t safety_margin(int64_t ttl_ms, int64_t transition_ms) {
  return 2 + (ttl_ms + transition_ms) / 100 + k_kill_latency_ms;
}

OwnerTimes ContendPeriod::owner_times(const Observed& o, int64_t sent_at,
                                      const LeaseTiming& t) const {
  OwnerTimes w;
  // Counted from the send, not the reply, less a margin for clock drift.
  w.deadline = sent_at + (o.lease.transition_at - o.now) - safety_margin(t.ttl_ms, t.transition_ms);
  w.kill_point = w.deadline - t.kill_after_ms;
  w.guard_at = std::max(std::min(sent_at + next_delay(o), w.kill_point - t.retry_ms), sent_at);
  return w;
}

int64_t ContendPeriod::next_delay(const Observed& o) const {
  const Lease& l = o.lease;
  if (l.owned_by(m_contender_id, o.now)) return l.ttl_at - o.now; // nextOwnerDelay
  // nextContenderDelay: the early side of the jitter gives the earliest waker
  // a head start, so the contenders do not all hit the backend at once.
  int64_t low = l.transition_at == l.ttl_at ? 0 : k_jitter_low;
  return l.transition_at - o.now + m_uniform(low, k_jitter_high);
}

int64_t ContendPeriod::backoff_delay(int failures, int64_t base, int64_t cap) const {
  int64_t d = std::max<int64_t>(base, 1);
  int64_t top = std::max(d, cap * 2 / 3); // d plus its jitter stays within cap
  for (int i = 1; i < failures && d < top; ++i) d *= 2;
  d = std::min(d, top);
  int64_t spread = d / 2;
  // a pinned `uniform` (tests) may answer outside the range: keep it inside
  return d + std::clamp<int64_t>(m_uniform(0, spread + 1), 0, spread);
}

} // namespace simba::core
