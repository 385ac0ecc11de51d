#pragma once
// The least room a lease needs (DESIGN §4). Settings that leave none are
// refused at start-up: with them every reply arrives after the kill point of
// the lease it grants, and simba could only spin on the backend.
//
// The rules, as ContendPeriod::owner_times (contend_period.hpp) applies them:
// a request sent at `s` gets a lease that ends, locally, at the deadline
// s + ttl + transition - margin, and CMD is stopped at the kill point
// deadline - kill_after. The owner's usable life is therefore
//   life = ttl + transition - margin - kill_after
// (margin = 2 ms + 1% of (ttl + transition) + 100 ms). The guard is due at ttl_at, or
// one retry period (250 ms) before the kill point if that is sooner; a failed
// guard is retried every retry period; a call never runs past the kill
// point, so the backend's call timeout is cut to what is left. Room means:
//   ttl  >= retry       the owner renews at most once per retry period;
//   life >= 2 * retry   the guard comes one retry period after the lease
//                       began at the earliest, and has a retry period (its
//                       call's whole timeout, at worst) before the kill point.
#include "core/contender.hpp"

#include <cstdint>

namespace simba::core {

// ttl + transition - margin - kill_after: from a request's send to the kill
// point of the lease it gets.
int64_t usable_life_ms(int64_t ttl_ms, int64_t transition_ms, int64_t kill_after_ms);

// The shortest ttl that leaves room with this transition, kill-after and
// retry period (the rules above).
int64_t min_ttl_ms(int64_t transition_ms, int64_t kill_after_ms, int64_t retry_ms);

// Throws a UsageError that names the minimum --ttl when `c` leaves no room.
void check_timing_room(const ContenderConfig& c);

} // namespace simba::core
