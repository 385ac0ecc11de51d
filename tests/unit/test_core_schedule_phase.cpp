#include "core/schedule_phase.hpp"
#include "core_support.hpp"

#include <doctest/doctest.h>

using namespace simba::core;
using namespace simba::test;

namespace {
constexpr int64_t k_t = 1796083200000; // 2026-12-01T00:00:00Z, a multiple of 5 min
constexpr int64_t k_5m = 300000;
} // namespace

TEST_SUITE("core::schedule_phase") {
  TEST_CASE("nothing recorded: the first run at once, ticks from it") {
    SchedulePlan p = plan_schedule(std::nullopt, k_t + 7, k_5m, false, 0);
    CHECK(p.first_run_at == k_t + 7);
    CHECK(p.origin == k_t + 7);
    p = plan_schedule(std::nullopt, k_t + 7, k_5m, false, 1000);
    CHECK(p.first_run_at == k_t + 1007);
    CHECK(p.origin == k_t + 1007);
  }
  TEST_CASE("a new leader keeps the last run's phase: the next tick after it") {
    SchedulePlan p = plan_schedule(k_t - 1000, k_t, k_5m, false, 0);
    CHECK(p.first_run_at == k_t - 1000 + k_5m);
    CHECK(p.origin == k_t - 1000);
    // that tick has passed (no leader for a while): at once, on the old phase
    p = plan_schedule(k_t - 2 * k_5m - 1000, k_t, k_5m, false, 0);
    CHECK(p.first_run_at == k_t);
    CHECK(p.origin == k_t - 2 * k_5m - 1000);
  }
  TEST_CASE("--align: ticks on multiples of every on the backend's clock") {
    // fresh: the next multiple, not at once
    SchedulePlan p = plan_schedule(std::nullopt, k_t + 120000, k_5m, true, 0);
    CHECK(p.first_run_at == k_t + k_5m);
    CHECK(p.origin % k_5m == 0);
    // this multiple's run was made: the next one
    p = plan_schedule(k_t + 30, k_t + 120000, k_5m, true, 0);
    CHECK(p.first_run_at == k_t + k_5m);
    // the run before was the last one: this multiple's tick was missed in a
    // hand-over, so at once
    p = plan_schedule(k_t - k_5m + 20, k_t + 1500, k_5m, true, 0);
    CHECK(p.first_run_at == k_t + 1500);
    // a multiple not dividing an hour: still on the epoch's multiples
    p = plan_schedule(std::nullopt, k_t + 1, 7 * 60000, true, 0);
    CHECK(p.first_run_at % (7 * 60000) == 0);
    CHECK(p.first_run_at > k_t + 1);
  }
}

namespace {
CallResult ours(int64_t backend_now, std::optional<int64_t> last_run = std::nullopt) {
  CallResult r;
  r.status = CallResult::Status::ok;
  r.changed = true;
  r.observed.now = backend_now;
  r.observed.lease.owner_id = "me";
  r.observed.lease.acquired_at = backend_now;
  r.observed.lease.ttl_at = backend_now + 10000;
  r.observed.lease.transition_at = backend_now + 12000;
  r.observed.lease.fencing_token = 5;
  r.last_run_at = last_run;
  return r;
}
} // namespace

TEST_SUITE("core::Contender schedule phase") {
  TEST_CASE("a new leader reads the last run, waits for its next tick, records each start") {
    ContenderConfig c;
    c.mutex = "m";
    c.contender_id = "me";
    c.mode = ContenderConfig::Mode::schedule;
    c.every_ms = 4000;
    Contender con(c, ContendPeriod("me", [](int64_t, int64_t) { return int64_t(0); }));
    Actions a = con.start(100);
    a = con.on_reply(101, ours(k_t));
    CHECK_FALSE(find<action::StartChild>(a)); // not at once
    const auto* read = find<action::Call>(a);
    REQUIRE(read);
    CHECK(read->op == Op::guard);
    CHECK(read->mark == RunMark::read);
    // the last run started 1 s ago (backend clock): the next tick in 3 s
    a = con.on_reply(102, ours(k_t + 1, k_t - 999));
    CHECK_FALSE(find<action::StartChild>(a));
    REQUIRE(con.wake_at());
    CHECK(*con.wake_at() == 102 + 3000);
    a = con.on_timer(102 + 3000);
    const auto* mark = find<action::Call>(a);
    REQUIRE(mark);
    CHECK(mark->mark == RunMark::record);
    CHECK_FALSE(find<action::StartChild>(a)); // once the start is recorded
    a = con.on_reply(3103, ours(k_t + 3002, k_t - 999));
    CHECK(find<action::StartChild>(a));
  }
}
