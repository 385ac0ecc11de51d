#include "core/contend_period.hpp"

#include <doctest/doctest.h>

using namespace simba::core;

namespace {

Observed observed(std::string owner, int64_t now, int64_t ttl_at, int64_t transition_at) {
  Observed o;
  o.now = now;
  o.lease.owner_id = std::move(owner);
  o.lease.acquired_at = ttl_at - 1000;
  o.lease.ttl_at = ttl_at;
  o.lease.transition_at = transition_at;
  o.lease.fencing_token = 1;
  return o;
}

} // namespace

TEST_SUITE("core::ContendPeriod") {
  TEST_CASE("owner delay is ttl_at - now") {
    ContendPeriod p("me", [](int64_t, int64_t) -> int64_t {
      FAIL("no jitter for the owner");
      return 0;
    });
    CHECK(p.next_delay(observed("me", 1000, 5000, 7000)) == 4000);
  }
  TEST_CASE("owner times: from the send, less the margin; the guard at ttl_at or a retry before "
            "the kill point") {
    ContendPeriod p("me", [](int64_t, int64_t) -> int64_t {
      FAIL("no jitter for the owner");
      return 0;
    });
    LeaseTiming t{10000, 2000, 1000, 250};
    // sent at local 100, answered at backend 1000 with ttl_at 11000, transition_at 13000
    OwnerTimes w = p.owner_times(observed("me", 1000, 11000, 13000), 100, t);
    CHECK(w.deadline == 100 + 12000 - safety_margin(10000, 2000));
    CHECK(w.kill_point == w.deadline - 1000);
    CHECK(w.guard_at == 100 + 10000);
    // A long kill-after: the guard comes one retry period before the kill point.
    t.kill_after_ms = 1900;
    w = p.owner_times(observed("me", 1000, 11000, 13000), 100, t);
    CHECK(w.guard_at == w.kill_point - 250);
    // Never before the send.
    w = p.owner_times(observed("me", 1000, 1100, 1200), 100, t);
    CHECK(w.guard_at == 100);
  }
  TEST_CASE("contender delay is transition_at - now + jitter in [-200, 1000)") {
    int64_t lo = 0, hi = 0;
    ContendPeriod p("me", [&](int64_t l, int64_t h) {
      lo = l;
      hi = h;
      return l;
    });
    CHECK(p.next_delay(observed("other", 1000, 5000, 7000)) == 6000 - 200);
    CHECK(lo == -200);
    CHECK(hi == 1000);
    ContendPeriod late("me", [](int64_t, int64_t h) { return h - 1; });
    CHECK(late.next_delay(observed("other", 1000, 5000, 7000)) == 6000 + 999);
  }
  TEST_CASE("no early jitter when the lease has no transition window") {
    int64_t lo = -1;
    ContendPeriod p("me", [&](int64_t l, int64_t) {
      lo = l;
      return l;
    });
    CHECK(p.next_delay(observed("other", 1000, 5000, 5000)) == 4000);
    CHECK(lo == 0);
  }
  TEST_CASE("ensureNextDelay clamps a negative delay to 0") {
    ContendPeriod p("me", [](int64_t l, int64_t) { return l; });
    // transition ends in 100 ms, jitter -200: -100 -> 0
    CHECK(p.next_delay(observed("other", 6900, 5000, 7000)) == -100);
    CHECK(p.ensure_next_delay(observed("other", 6900, 5000, 7000)) == 0);
  }
  TEST_CASE("a lease of another owner that passed its transition is not ours") {
    ContendPeriod p("me", [](int64_t, int64_t) { return 0; });
    // expired lease of "me" is not owned any more: contender rule applies
    CHECK(p.next_delay(observed("me", 8000, 5000, 7000)) == -1000);
  }
}
