#include "core/contender.hpp"
#include "core/error.hpp"
#include "core/timing_limits.hpp"
#include "fake_backend.hpp"

#include <doctest/doctest.h>

using namespace simba;
using namespace simba::core;

namespace {

ContenderConfig timing(int64_t ttl, int64_t transition, int64_t kill_after) {
  ContenderConfig c;
  c.mutex = "m";
  c.contender_id = "me";
  c.ttl_ms = ttl;
  c.transition_ms = transition;
  c.kill_after_ms = kill_after;
  return c;
}

// What the contender itself does with these settings on a backend that
// answers at once: when the first guard is due after the lease began, and
// how long before the kill point.
struct FirstGuard {
  int64_t after_start;
  int64_t before_kill_point;
};

FirstGuard first_guard(const ContenderConfig& cfg) {
  test::FakeBackend backend;
  int64_t local = 5000;
  Contender c(cfg, ContendPeriod(cfg.contender_id, [](int64_t, int64_t) { return 0; }));
  Actions a = c.start(local);
  REQUIRE(!a.empty());
  a = c.on_reply(local, backend.apply("m", "me", std::get<action::Call>(a.back())));
  REQUIRE(c.phase() == Contender::Phase::owning);
  REQUIRE(c.wake_at());
  int64_t kill_point = c.deadline() - cfg.kill_after_ms;
  return {*c.wake_at() - local, kill_point - *c.wake_at()};
}

bool refused(const ContenderConfig& c) {
  try {
    check_timing_room(c);
    return false;
  } catch (const UsageError&) {
    return true;
  }
}

} // namespace

TEST_SUITE("core::timing_limits") {
  TEST_CASE("the usable life of a lease is ttl + transition - margin - kill_after") {
    CHECK(usable_life_ms(10000, 2000, 1000) == 12000 - 222 - 1000);
    CHECK(usable_life_ms(1, 1, 0) == -100); // the issue's --ttl 1ms --transition 1ms: none
  }

  TEST_CASE(
      "the minimum ttl is the least with which the first guard has a retry period on both sides") {
    // Against the contender's own schedule: at the minimum the guard comes a
    // retry period after the lease began at the earliest, and a retry
    // period before the kill point at the latest; one ms less and it does not.
    for (int64_t transition : {1, 2, 100, 500, 1000, 2000, 10000}) {
      for (int64_t kill_after : {int64_t(0), transition / 2, transition - 1}) {
        CAPTURE(transition);
        CAPTURE(kill_after);
        int64_t least = min_ttl_ms(transition, kill_after, 250);
        FirstGuard at = first_guard(timing(least, transition, kill_after));
        CHECK(at.after_start >= 250);
        CHECK(at.before_kill_point >= 250);
        CHECK_FALSE(refused(timing(least, transition, kill_after)));
        if (least > 1) {
          FirstGuard below = first_guard(timing(least - 1, transition, kill_after));
          CHECK((below.after_start < 250 || below.before_kill_point < 250));
          CHECK(refused(timing(least - 1, transition, kill_after)));
        }
      }
    }
  }

  TEST_CASE("the issue's settings are refused, naming the minimum; the usual ones pass") {
    ContenderConfig bad = timing(1, 1, 0); // --ttl 1ms --transition 1ms
    try {
      check_timing_room(bad);
      FAIL("--ttl 1ms --transition 1ms was accepted");
    } catch (const UsageError& e) {
      CHECK(e.code() == 64);
      std::string m = e.what();
      CHECK(m.find("--ttl 1ms") != std::string::npos);
      CHECK(m.find("the minimum is --ttl 607ms") != std::string::npos);
      CHECK(m.find('\n') == std::string::npos);
    }
    CHECK(min_ttl_ms(1, 0, 250) == 607); // 607 + 1 - (2 + 6 + 100) - 0 = 500
    // A ttl shorter than a retry period: renewals faster than retries.
    CHECK(min_ttl_ms(10000, 0, 250) == 250);
    // A kill-after that eats the transition needs a longer ttl.
    CHECK(min_ttl_ms(2000, 1999, 250) == 627); // 627 + 2000 - (2 + 26 + 100) - 1999 = 500
    // The margin grows with ttl + transition: 1% of a 100 s transition.
    CHECK(min_ttl_ms(100000, 99999, 250) == 1617);
    try {
      check_timing_room(timing(1000, 100000, 99999));
      FAIL("accepted");
    } catch (const UsageError& e) {
      // in a form --ttl reads back (format_duration would say 1.617s)
      CHECK(std::string(e.what()).find("the minimum is --ttl 1617ms") != std::string::npos);
    }
    CHECK_FALSE(refused(timing(10000, 2000, 1000))); // the defaults
    CHECK_FALSE(refused(timing(1000, 1000, 500)));   // the tests' and chaos' 1s/1s
    CHECK_FALSE(refused(timing(1000, 500, 250)));
  }
}
