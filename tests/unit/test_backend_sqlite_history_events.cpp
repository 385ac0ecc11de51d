// Which history events a SQLite write makes (history_events.hpp): the
// e2e test test_history plays them through real runs; here each case of the
// rule, on invented leases and clocks.
#include "backend/sqlite/history_events.hpp"

#include <doctest/doctest.h>

using simba::backend::HistoryEvent;
using simba::backend::Holder;
using simba::backend::sqlite::EventContext;
using simba::backend::sqlite::history_events;
using simba::core::Lease;

namespace {

constexpr int64_t k_now = 50000, k_to_wall = 1700000000000;

Lease lease(const std::string& owner, int64_t acquired, int64_t transition, uint64_t token) {
  Lease l;
  l.owner_id = owner;
  l.acquired_at = acquired;
  l.ttl_at = transition;
  l.transition_at = transition;
  l.fencing_token = token;
  return l;
}

EventContext context() {
  EventContext c;
  c.now = k_now;
  c.boot_to_wall = k_to_wall;
  c.holder = Holder{"run", 42, "h", "make"};
  return c;
}

} // namespace

TEST_SUITE("backend::sqlite::history_events") {
  TEST_CASE("an acquisition of a free mutex: acquired, with how long it waited in the queue") {
    EventContext c = context();
    c.queued_at_ms = k_now + k_to_wall - 1500;
    HistoryEvent out[2];
    REQUIRE(history_events(lease("", 0, 40000, 7), lease("B", k_now, k_now + 12000, 8), true, c,
                           out) == 1);
    CHECK(out[0].event == "acquired");
    CHECK(out[0].at == k_now + k_to_wall);
    CHECK(out[0].owner_id == "B");
    CHECK(out[0].token == 8);
    REQUIRE(out[0].holder);
    CHECK(out[0].holder->pid == 42);
    CHECK(out[0].waited_ms == 1500);
  }

  TEST_CASE("a lease that ran out unreleased: expired at its end, then acquired") {
    HistoryEvent out[2];
    REQUIRE(history_events(lease("A", 30000, 42000, 7), lease("B", k_now, k_now + 12000, 8), true,
                           context(), out) == 2);
    CHECK(out[0].event == "expired");
    CHECK(out[0].at == 42000 + k_to_wall);
    CHECK(out[0].owner_id == "A");
    CHECK(out[0].token == 7);
    CHECK(out[0].held_ms == 12000);
    CHECK_FALSE(out[0].holder);
    CHECK(out[1].event == "acquired");
    CHECK(out[1].owner_id == "B");
    CHECK(out[1].waited_ms == 0);
  }

  TEST_CASE("a renewal makes no event") {
    HistoryEvent out[2];
    CHECK(history_events(lease("A", 30000, 52000, 7), lease("A", 30000, 62000, 7), false, context(),
                         out) == 0);
  }

  TEST_CASE("a release: released, with CMD's exit code and how long it was held") {
    EventContext c = context();
    c.exit_code = 3;
    HistoryEvent out[2];
    REQUIRE(history_events(lease("A", 30000, 62000, 7), lease("", 30000, k_now, 7), false, c,
                           out) == 1);
    CHECK(out[0].event == "released");
    CHECK(out[0].at == k_now + k_to_wall);
    CHECK(out[0].owner_id == "A");
    CHECK(out[0].held_ms == k_now - 30000);
    CHECK(out[0].exit_code == 3);
    CHECK_FALSE(out[0].holder);
  }

  TEST_CASE("a forced release: forced, by whom") {
    EventContext c = context();
    c.forced = true;
    HistoryEvent out[2];
    REQUIRE(history_events(lease("A", 30000, 62000, 7), lease("", 30000, 62000, 7), false, c,
                           out) == 1);
    CHECK(out[0].event == "forced");
    REQUIRE(out[0].holder);
    CHECK(out[0].holder->via == "run");
    CHECK_FALSE(out[0].exit_code);
  }
}

TEST_SUITE("backend::sqlite::counter_steps") {
  using simba::backend::sqlite::counter_steps;
  using simba::backend::sqlite::lost_count;

  TEST_CASE("a new lease is an acquisition; the lease it replaces a loss when it ran out "
            "unreleased, not when only held or counted by its holder's lost event") {
    Lease next = lease("B", k_now, k_now + 1000, 8);
    auto free = counter_steps(Lease{}, next, true, false, 0);
    CHECK(free.acquisitions == 1);
    CHECK(free.losses == 0);
    Lease ran_out = lease("A", 1000, 2000, 7);
    auto expired = counter_steps(ran_out, next, true, false, 0);
    CHECK(expired.acquisitions == 1);
    CHECK(expired.losses == 1);
    CHECK(counter_steps(ran_out, next, true, false, 7).losses == 0); // noted by lost
    CHECK(counter_steps(ran_out, next, true, false, 6).losses == 1); // an older note
    Lease held = ran_out;
    held.holding = true; // --min-hold or simba acquire: its normal end
    CHECK(counter_steps(held, next, true, false, 0).losses == 0);
    Lease released = ran_out;
    released.owner_id.clear();
    CHECK(counter_steps(released, next, true, false, 0).losses == 0);
  }

  TEST_CASE("a forced release is a loss once; a release or a renewal is none") {
    Lease cur = lease("A", 1000, k_now + 5000, 7);
    Lease revoked = cur;
    revoked.owner_id.clear();
    auto forced = counter_steps(cur, revoked, false, true, 0);
    CHECK(forced.acquisitions == 0);
    CHECK(forced.losses == 1);
    CHECK(counter_steps(cur, revoked, false, true, 7).losses == 0);
    CHECK(counter_steps(cur, revoked, false, false, 0).losses == 0); // released
    CHECK(counter_steps(cur, cur, false, false, 0).losses == 0);     // renewed
    CHECK(counter_steps(cur, cur, false, false, 0).acquisitions == 0);
  }

  TEST_CASE("lost: counted while the row shows the lease as ours (noted) or shows none of it") {
    Lease ours = lease("me", 1000, k_now + 5000, 7);
    auto standing = lost_count(ours, "me", 7);
    CHECK(standing.counts);
    CHECK(standing.note);
    Lease ran_out = lease("me", 1000, 2000, 7); // its expiry is not written yet
    CHECK(lost_count(ran_out, "me", 7).counts);
    CHECK(lost_count(ran_out, "me", 7).note);
    Lease revoked = ours;
    revoked.owner_id.clear(); // its forced counted it
    CHECK_FALSE(lost_count(revoked, "me", 7).counts);
    CHECK_FALSE(lost_count(revoked, "me", 7).note);
    Lease later = lease("other", k_now, k_now + 5000, 9); // its acquisition counted the expiry
    CHECK_FALSE(lost_count(later, "me", 7).counts);
    Lease older = lease("", 0, 0, 3); // the database lost it
    CHECK(lost_count(older, "me", 7).counts);
    CHECK_FALSE(lost_count(older, "me", 7).note);
  }
}
