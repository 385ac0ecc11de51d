#include "core/contender.hpp"
#include "core/duration.hpp"
#include "core/once_per.hpp"
#include "core_support.hpp"

#include "../common/window_cases.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace simba;
using namespace simba::core;
using namespace simba::test;

namespace {

constexpr int64_t k_day = 86400000;
// 2026-12-01T00:00:00Z
constexpr int64_t k_midnight = 1796083200000;

OncePer per(int64_t period, int64_t offset = 0, bool retry = false) {
  return {period, offset, retry};
}

DoneRecord finished(int64_t window, int code) {
  DoneRecord r{window, "job", "host-a", 7, window + 10};
  r.finished = true;
  r.exit_code = code;
  r.finished_at = window + 20;
  return r;
}

Lease held_by(const std::string& owner, uint64_t token, int64_t now) {
  Lease l;
  l.owner_id = owner;
  l.acquired_at = now - 100;
  l.ttl_at = now + 10000;
  l.transition_at = now + 12000;
  l.fencing_token = token;
  return l;
}

ContenderConfig once_config(OncePer o) {
  ContenderConfig c;
  c.mutex = "m";
  c.contender_id = "me";
  c.label = "me";
  c.once = o;
  return c;
}

} // namespace

TEST_SUITE("core::once_per") {
  TEST_CASE("windows are multiples of the period on the epoch") {
    CHECK(window_start(k_midnight, 5 * 60000, 0) == k_midnight);
    CHECK(window_start(k_midnight + 299999, 5 * 60000, 0) == k_midnight);
    CHECK(window_start(k_midnight + 300000, 5 * 60000, 0) == k_midnight + 300000);
    CHECK(window_start(k_midnight + 12 * 3600000, k_day, 0) == k_midnight);
  }
  TEST_CASE("an offset shifts every window") {
    int64_t two = 2 * 3600000;
    CHECK(window_start(k_midnight + two, k_day, two) == k_midnight + two);
    CHECK(window_start(k_midnight + two - 1, k_day, two) == k_midnight + two - k_day);
    CHECK(window_start(k_midnight + 5 * 60000 + 30000, 5 * 60000, 30000) ==
          k_midnight + 5 * 60000 + 30000);
  }
  TEST_CASE("a period that does not divide a day counts from the epoch, not from midnight") {
    int64_t seven = 7 * 60000;
    int64_t w = window_start(k_midnight, seven, 0);
    CHECK(w % seven == 0);
    CHECK(w <= k_midnight);
    CHECK(k_midnight - w < seven);
    CHECK(w != k_midnight); // 2026-12-01 is not a multiple of 7 minutes since the epoch
    CHECK(window_start(w + seven - 1, seven, 0) == w);
    CHECK(window_start(w + seven, seven, 0) == w + seven);
  }
  // The table the Lua and the SQL copies of the rule are run against too
  // (tests/backend/conformance_window.cpp).
  TEST_CASE("every case of the boundary table") {
    for (const WindowCase& c : k_window_cases) {
      std::string what = c.what;
      CAPTURE(what);
      CHECK(window_start(c.now, c.period, c.offset) == c.start);
    }
  }
  TEST_CASE("times before the epoch floor, not truncate") {
    CHECK(window_start(-1, 1000, 0) == -1000);
    CHECK(window_start(-1000, 1000, 0) == -1000);
    CHECK(window_start(-1001, 1000, 0) == -2000);
  }
  TEST_CASE("days are a unit") { CHECK(parse_duration("1d", "x") == k_day); }

  TEST_CASE("the done record: who may run in a window") {
    OncePer o = per(10000);
    int64_t now = k_midnight + 5000;
    Lease free_lease;
    CHECK(judge_window(std::nullopt, free_lease, now, o) == WindowState::open);
    CHECK(judge_window(finished(k_midnight, 0), free_lease, now, o) == WindowState::ran_ok);
    CHECK(judge_window(finished(k_midnight, 3), free_lease, now, o) == WindowState::failed);
    // the previous window's record never blocks this one
    CHECK(judge_window(finished(k_midnight - 10000, 0), free_lease, now, o) == WindowState::open);
    CHECK(judge_window(finished(k_midnight - 10000, 1), free_lease, now, o) == WindowState::open);
    DoneRecord started{k_midnight, "job", "host-a", 7, k_midnight + 10};
    CHECK(judge_window(started, held_by("x", 7, now), now, o) == WindowState::running);
    // its lease is gone without a release (lost), or another lease holds: failed
    CHECK(judge_window(started, free_lease, now, o) == WindowState::failed);
    CHECK(judge_window(started, held_by("y", 8, now), now, o) == WindowState::failed);

    CHECK(may_run(WindowState::open, o));
    CHECK_FALSE(may_run(WindowState::ran_ok, o));
    CHECK_FALSE(may_run(WindowState::failed, o));
    CHECK_FALSE(may_run(WindowState::running, o));
    OncePer retry = per(10000, 0, true);
    CHECK(may_run(WindowState::failed, retry));
    CHECK_FALSE(may_run(WindowState::ran_ok, retry));
    CHECK_FALSE(may_run(WindowState::running, retry));
  }
  TEST_CASE("the contender's window is judged, not now's: the shared table") {
    const int64_t period = 6000;
    const int64_t now = k_midnight + 2 * period + 4300; // the window of now: k_midnight + 12000
    const int64_t w0 = window_start(now, period, 0);
    for (const JudgeCase& c : k_judge_cases) {
      std::string what = c.what;
      CAPTURE(what);
      std::optional<DoneRecord> rec;
      if (c.record != k_no_record) rec = finished(w0 + c.record * period, c.record_exit);
      OncePer o = per(period, 0, c.retry_failed);
      o.window = c.contender == k_window_of_now ? 0 : w0 + c.contender * period;
      WindowState s = judge_window(rec, Lease{}, now, o);
      CHECK(may_run(s, o) == c.runs);
      bool later = rec && rec->window_start > judged_window(now, o);
      CHECK((s == WindowState::passed_over) == later);
    }
  }
  TEST_CASE("lateness: a run that started after its window's end says by how much") {
    DoneRecord r = finished(k_midnight, 0);
    r.period_ms = 6000;
    r.started_at = k_midnight + 5999;
    CHECK(lateness(r) == 0);
    CHECK(late_note(r).empty());
    r.started_at = k_midnight + 6000 + 4300;
    CHECK(lateness(r) == 4300);
    CHECK(late_note(r) == "late by 4.3s for the window of 2026-12-01T00:00:00Z");
    r.period_ms = 0; // a record of an older simba: no terms, no lateness
    CHECK(lateness(r) == 0);
  }
  TEST_CASE("the message names the host, the time and the exit") {
    DoneRecord later = finished(k_midnight + 6000, 0);
    later.finished_at = k_midnight + 7000;
    CHECK(passed_over_message(k_midnight, later) ==
          "the window of 2026-12-01T00:00:00Z was passed over: a later window "
          "(2026-12-01T00:00:06Z) already ran on host-a at 2026-12-01T00:00:07Z (exit 0; "
          "contender job)");
    CHECK(already_ran_message(finished(k_midnight, 0)) ==
          "already ran in this window on host-a at 2026-12-01T00:00:00Z (exit 0; contender job)");
    DoneRecord lost{k_midnight, "job", "host-a", 7, k_midnight + 60000};
    CHECK(already_ran_message(lost) ==
          "already ran in this window on host-a at 2026-12-01T00:01:00Z (lease lost; contender "
          "job)");
  }
}

TEST_SUITE("core::Contender --once-per") {
  // The window is the one holding the backend's now; the contender's own
  // clock (here hours off the backend's) plays no part.
  TEST_CASE("a contender whose clock is off goes by the backend's clock") {
    for (int64_t local : {int64_t(5000), k_midnight + 3 * 3600000, k_midnight - 7 * 60000}) {
      CAPTURE(local);
      Contender c = make_contender(once_config(per(10000)));
      Actions a = c.start(local);
      REQUIRE(find<action::Call>(a));
      CallResult r;
      r.status = CallResult::Status::ok;
      r.observed.now = k_midnight + 9000; // the backend: late in the window of k_midnight
      r.done = finished(k_midnight, 0);
      a = c.on_reply(local + 5, r);
      const auto* exit = find<action::Exit>(a);
      REQUIRE(exit);
      CHECK(exit->code == 75);
      const auto* log = find<action::Log>(a);
      REQUIRE(log);
      CHECK(log->message.find("already ran in this window on host-a") == 0);
      // the history hears who ran it and when (issue 31 §1)
      const auto* skipped = find<action::RecordSkipped>(a);
      REQUIRE(skipped);
      CHECK(std::string(skipped->reason) == "already-ran");
      CHECK(skipped->by == "job");
      CHECK(skipped->token == 7);
      CHECK(*skipped->held_ms == 9000 - 10); // since the run started
      CHECK(skipped->exit_code == 0);
    }
  }
  TEST_CASE("the next window on the backend's clock runs, whatever the record says") {
    Contender c = make_contender(once_config(per(10000)));
    Actions a = c.start(100);
    CallResult r;
    r.status = CallResult::Status::ok;
    r.observed.now = k_midnight + 10000; // the next window
    r.done = finished(k_midnight, 0);
    // the backend gave the lease: ours
    r.observed.lease = held_by("me", 9, r.observed.now);
    r.changed = true;
    a = c.on_reply(105, r);
    CHECK(find<action::StartChild>(a));
    CHECK_FALSE(find<action::Exit>(a));
  }
  TEST_CASE("a failed run: refused without --retry-failed, tried again with it") {
    for (bool retry : {false, true}) {
      CAPTURE(retry);
      Contender c = make_contender(once_config(per(10000, 0, retry)));
      c.start(100);
      CallResult r;
      r.status = CallResult::Status::ok;
      r.observed.now = k_midnight + 3000;
      r.done = finished(k_midnight, 2);
      Actions a = c.on_reply(105, r);
      // with --retry-failed a free mutex the backend did not give us is
      // contended for again (the backend decides; here it was taken meanwhile)
      CHECK(bool(find<action::Exit>(a)) == !retry);
    }
  }
  TEST_CASE("while the window's run goes on: wait; --no-wait: the conflict code at once") {
    for (bool no_wait : {false, true}) {
      CAPTURE(no_wait);
      ContenderConfig cfg = once_config(per(10000));
      cfg.no_wait = no_wait;
      cfg.conflict_exit_code = 3;
      Contender c = make_contender(cfg);
      c.start(100);
      CallResult r;
      r.status = CallResult::Status::ok;
      r.observed.now = k_midnight + 3000;
      r.done = DoneRecord{k_midnight, "job", "host-a", 7, k_midnight + 10};
      r.observed.lease = held_by("other", 7, r.observed.now);
      Actions a = c.on_reply(105, r);
      const auto* exit = find<action::Exit>(a);
      CHECK(bool(exit) == no_wait);
      if (exit) CHECK(exit->code == 3);
      if (!no_wait) CHECK(c.phase() == Contender::Phase::contending);
    }
  }
  TEST_CASE("the release carries CMD's exit code for the record") {
    Contender c = make_contender(once_config(per(10000)));
    c.start(100);
    CallResult r;
    r.status = CallResult::Status::ok;
    r.observed.now = k_midnight + 3000;
    r.observed.lease = held_by("me", 9, r.observed.now);
    r.changed = true;
    Actions a = c.on_reply(105, r);
    REQUIRE(find<action::StartChild>(a));
    a = c.on_child_exit(200, 4, false);
    if (!find<action::Call>(a)) a = c.on_all_gone(201);
    const auto* call = find<action::Call>(a);
    REQUIRE(call);
    CHECK(call->op == Op::release);
    CHECK(call->exit_code == 4);
  }
  // Issue 31 §1: a contender that waits past its window's end is still
  // judged in the window of the backend's now in its first reply.
  TEST_CASE("the window of the first reply is passed in every later acquire") {
    Contender c = make_contender(once_config(per(6000)));
    Actions a = c.start(100);
    const auto* call = find<action::Call>(a);
    REQUIRE(call);
    CHECK(call->once_window == 0); // not known yet: the window of now
    CallResult first;
    first.status = CallResult::Status::ok;
    first.observed.now = k_midnight + 200;
    first.observed.lease = held_by("other", 7, first.observed.now);
    a = c.on_reply(105, first); // held: wait
    CHECK_FALSE(find<action::Exit>(a));
    a = c.on_notify(20000);
    call = find<action::Call>(a);
    REQUIRE(call);
    CHECK(call->op == Op::acquire);
    CHECK(call->once_window == k_midnight);
    // Two windows on, a later window's run is recorded: passed over, at once
    // (even while that run still holds the mutex).
    CallResult later;
    later.status = CallResult::Status::ok;
    later.observed.now = k_midnight + 13000;
    later.observed.lease = held_by("other", 9, later.observed.now);
    later.done = DoneRecord{k_midnight + 12000, "job", "host-c", 9, k_midnight + 12500};
    a = c.on_reply(20005, later);
    const auto* exit = find<action::Exit>(a);
    REQUIRE(exit);
    CHECK(exit->code == 75);
    const auto* log = find<action::Log>(a);
    REQUIRE(log);
    CHECK(log->message.find("the window of 2026-12-01T00:00:00Z was passed over: a later window "
                            "(2026-12-01T00:00:12Z) started on host-c") == 0);
  }
  TEST_CASE("a late run says for which window and how late") {
    Contender c = make_contender(once_config(per(6000)));
    c.start(100);
    CallResult first;
    first.status = CallResult::Status::ok;
    first.observed.now = k_midnight + 200;
    first.observed.lease = held_by("other", 7, first.observed.now);
    c.on_reply(105, first);
    c.on_notify(8000);
    CallResult got;
    got.status = CallResult::Status::ok;
    got.observed.now = k_midnight + 7500;
    got.observed.lease = held_by("me", 8, got.observed.now);
    got.changed = true;
    DoneRecord rec{k_midnight, "me", "h", 8, k_midnight + 7500};
    rec.period_ms = 6000;
    got.done = rec;
    Actions a = c.on_reply(8005, got);
    CHECK(find<action::StartChild>(a));
    bool said = false;
    for (const Action& x : a)
      if (const auto* l = std::get_if<action::Log>(&x))
        said = said || l->message == "running m late by 1.5s for the window of "
                                     "2026-12-01T00:00:00Z";
    CHECK(said);
  }
  TEST_CASE("a grant is not taken as it is: acquire_once judges it first") {
    Contender c = make_contender(once_config(per(10000)));
    Actions a = c.start(100);
    CallResult first;
    first.status = CallResult::Status::ok;
    first.observed.now = k_midnight + 3000;
    first.observed.lease = held_by("other", 7, first.observed.now);
    a = c.on_reply(105, first); // held: wait
    CallResult grant;
    grant.status = CallResult::Status::ok;
    grant.observed.now = k_midnight + 4000;
    grant.observed.lease = held_by("me", 8, grant.observed.now);
    grant.changed = true;
    a = c.on_grant(200, grant, 150);
    CHECK_FALSE(find<action::StartChild>(a));
    const auto* call = find<action::Call>(a);
    REQUIRE(call);
    CHECK(call->op == Op::acquire);
  }
}
