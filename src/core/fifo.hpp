#pragma once
// FIFO on the timed paths (docs/design.md "First come, first served"). A
// clean release hands the mutex to the first live waiter (backend/wakeups.hpp):
// Redis grants it; SQLite, PostgreSQL and MySQL wake that waiter and gate
// the acquisitions that follow the release as below (a waiter's timer that
// fired first took the mutex ahead of the one woken: w1 w3 w2 under load).
// Two ends have no releaser: a lease that ran out (its owner died: kill -9,
// a lost host) and the end of a quarantine (Redis, PostgreSQL: the server
// may have lost a lease). Then every waiter's timer fires at about the same
// moment, and the first acquire to arrive would win. The rule of --slots
// (slots.hpp: may_take_free_slot) applies, with one slot: such a lease
// goes to the first live waiter in the queue; anyone else, a waiter further
// back, a latecomer or the lapsed owner itself, is refused ("busy": the
// lease unchanged, shown with no owner: fifo_refusal) until the
// mutex has stayed free for k_fifo_fallback_ms, so that a head waiter that
// is stuck (or whose notification failed) cannot block the rest for ever.
//
// Safety (DESIGN §2, §4): the gate only ever refuses. A contender it lets
// through gets exactly what the acquisition rule gives it today; no lease
// is granted, kept or extended by it, nor shown so. Its worst case is a delay of
// k_fifo_fallback_ms.
//
// The hot path: a backend asks the gate only of a lease that ended (by its
// timer, a release) or a quarantine less than k_fifo_fallback_ms ago
// (fifo_gate_due), never of a mutex that has no lease or has been free for
// longer; an acquire right after a release reads the queue once.
#include "core/lease.hpp"
#include "core/slots.hpp"

#include <algorithm>
#include <cstdint>

namespace simba::core {

constexpr int64_t k_fifo_fallback_ms = k_slot_fallback_ms;

// Whether a free mutex, free since `free_since` (the transition_at of the
// lease that ran out, or the end of the quarantine; 0: unknown, never
// gated), is still in its gated time at `now`.
inline bool fifo_gate_due(int64_t free_since, int64_t now) {
  return free_since > 0 && now < free_since + k_fifo_fallback_ms;
}

// Whether a contender with `live_ahead` live waiters queued before it (the
// whole queue when it is in none) may take the mutex free since
// `free_since`: the first live waiter may; others once the fallback passed.
inline bool may_take_freed_lease(int live_ahead, int64_t free_since, int64_t now) {
  return may_take_free_slot(live_ahead, 1, free_since, now);
}

// What a refused contender is shown: `l` not free before the fallback
// ends, so that it sleeps until then unless a wake-up comes first (a free
// lease shown would make it try again at once) -- and owned by nobody.
// The lease ran out: shown with its owner and a later transition_at, it
// would be valid again for that owner, who may be the one refused (its
// renewal came after the end: a grant delivered late, a slow link) and
// would start CMD on a lease it no longer has while the first waiter
// takes the mutex (chaos/sentinel, seed 1821674248). Shown so, it reads
// as revoked: not free, nobody's.
inline Lease fifo_refusal(Lease l, int64_t free_since) {
  l.owner_id.clear();
  l.holding = false;
  l.transition_at = std::max(l.transition_at, free_since + k_fifo_fallback_ms);
  l.ttl_at = std::min(l.ttl_at, l.transition_at);
  return l;
}

} // namespace simba::core
