#pragma once
// ContendPeriod (DESIGN §3): when a contender next calls the backend.
#include "core/lease.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace simba::core {

class ContendPeriod {
public:
  // `uniform(lo, hi)` returns an integer uniformly drawn from [lo, hi); it is
  // injected so tests can pin the jitter.
  using Uniform = std::function<int64_t(int64_t lo, int64_t hi)>;

  ContendPeriod(std::string contender_id, Uniform uniform)
    : m_contender_id(std::move(contender_id)), m_uniform(std::move(uniform)) {}

  // Owner: ttl_at - now. Non-owner: transition_at - now + jitter, jitter in
  // [-200, 1000) ms, or [0, 1000) when the lease has no transition window.
  // Not clamped.
  int64_t next_delay(const Observed& observed) const;

  // next_delay clamped to >= 0 (the seed's ensureNextDelay).
  int64_t ensure_next_delay(const Observed& observed) const {
    int64_t d = next_delay(observed);
    return d < 0 ? 0 : d;
  }

  // After the n-th failure in a row (n >= 1) of a waiter's acquire: d =
  // `base` doubled n-1 times (at most 2/3 of `cap`), plus a jitter drawn in
  // [0, d/2], so that waiters that failed together do not come back
  // together. Never less than `base`, never more than `cap` (if cap >= base).
  int64_t backoff_delay(int failures, int64_t base, int64_t cap) const;

  static constexpr int64_t k_jitter_low = -200;
  static constexpr int64_t k_jitter_high = 1000;

private:
  std::string m_contender_id;
  Uniform m_uniform;
};

} // namespace simba::core
