#pragma once
// The contend timing rules in one place (DESIGN §3, §4): when a waiter next
// tries to acquire, and when an owner's lease ends, is stopped and is guarded.
// timing_limits.hpp checks at start-up that the settings leave room for them.
#include "core/lease.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace simba::core {

// How long a SIGKILL may take to end CMD's tree on a busy host: the timer of
// the watchdog (or of simba's loop) fires late, then each killed process
// must be scheduled to exit (only its exit drops its locks and closes its
// sockets). Measured at load 15 on 2 cores: up to 26 ms + 52 ms.
constexpr int64_t k_kill_latency_ms = 100;

// Safety margin of DESIGN §4, 2 ms + 1% of (ttl + transition) for clock
// drift, plus k_kill_latency_ms: a CMD killed at the deadline is gone
// before the lease is.
int64_t safety_margin(int64_t ttl_ms, int64_t transition_ms);

// The settings an owner's times are counted with.
struct LeaseTiming {
  int64_t ttl_ms = 0;
  int64_t transition_ms = 0;
  int64_t kill_after_ms = 0;
  int64_t retry_ms = 0; // a failed guard is retried this often
};

// An owner's lease in local time, for the request sent at `sent_at` whose
// reply showed the lease ours.
struct OwnerTimes {
  int64_t deadline = 0;   // the lease surely ends after this
  int64_t kill_point = 0; // CMD is stopped here: deadline - kill_after
  int64_t guard_at = 0;   // the next guard
};

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

  // Counted from `sent_at` less the safety margin: the deadline (DESIGN §4).
  // The guard is due at ttl_at (next_delay), or one retry period before the
  // kill point if that is sooner, so that failed guards can be retried.
  OwnerTimes owner_times(const Observed& owned, int64_t sent_at, const LeaseTiming& t) const;

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
