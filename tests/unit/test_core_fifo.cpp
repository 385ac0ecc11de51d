// FIFO on the timed paths (core/fifo.hpp): a lease that ran out, or a
// quarantine that ended, goes to the first live waiter; the others are
// refused until the mutex has stayed free for the fallback.
#include "core/fifo.hpp"

#include <doctest/doctest.h>

using namespace simba::core;

TEST_CASE("fifo: the gate is due only just after a timed end") {
  const int64_t ended = 50000;
  CHECK_FALSE(fifo_gate_due(0, 1000));     // no lease ever, or released: never asked
  CHECK(fifo_gate_due(ended, ended));
  CHECK(fifo_gate_due(ended, ended + k_fifo_fallback_ms - 1));
  CHECK_FALSE(fifo_gate_due(ended, ended + k_fifo_fallback_ms));
}

TEST_CASE("fifo: only the first live waiter takes a freed lease, until the fallback") {
  const int64_t ended = 50000;
  CHECK(may_take_freed_lease(0, ended, ended)); // the head (or nobody waits)
  CHECK_FALSE(may_take_freed_lease(1, ended, ended));
  CHECK_FALSE(may_take_freed_lease(2, ended, ended + k_fifo_fallback_ms - 1));
  // The head did not come (stopped, or never told): anyone may.
  CHECK(may_take_freed_lease(2, ended, ended + k_fifo_fallback_ms));
}

TEST_CASE("fifo: a refused contender is shown a lease that is not free before the fallback") {
  Lease l;
  l.owner_id = "dead";
  l.acquired_at = 1000;
  l.ttl_at = 2000;
  l.transition_at = 3000;
  l.fencing_token = 7;
  Lease shown = fifo_refusal(l, l.transition_at);
  // Nobody's: shown with its owner, the lapsed lease would be valid again
  // for that owner, should it be the one refused (a renewal too late).
  CHECK(shown.owner_id.empty());
  CHECK_FALSE(shown.owned_by("dead", 3000));
  CHECK(shown.revoked_at(3000));
  CHECK(shown.fencing_token == 7);
  CHECK(shown.transition_at == 3000 + k_fifo_fallback_ms);
  CHECK(shown.ttl_at == 2000);
  CHECK_FALSE(shown.free_at(3000 + k_fifo_fallback_ms - 1));
  CHECK(shown.free_at(3000 + k_fifo_fallback_ms));
  // A quarantine's end, on a mutex without a lease: free since the end.
  Lease none;
  Lease q = fifo_refusal(none, 9000);
  CHECK(q.transition_at == 9000 + k_fifo_fallback_ms);
  CHECK(q.ttl_at == 0);
  CHECK_FALSE(q.free_at(9500));
}
