#include "core/contend_period.hpp"

namespace simba::core {

int64_t ContendPeriod::next_delay(const Observed& o) const {
  const Lease& l = o.lease;
  if (l.owned_by(m_contender_id, o.now)) return l.ttl_at - o.now; // nextOwnerDelay
  // nextContenderDelay: the early side of the jitter gives the earliest waker
  // a head start, so the contenders do not all hit the backend at once.
  int64_t low = l.transition_at == l.ttl_at ? 0 : k_jitter_low;
  return l.transition_at - o.now + m_uniform(low, k_jitter_high);
}

} // namespace simba::core
