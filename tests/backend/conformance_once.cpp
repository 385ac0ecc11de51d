// Conformance of the --once-per and schedule operations (acquire_once,
// release_once, done_record, guard_mark), on every backend like the rest of
// the suite. Windows of a day put an hour back with the offset, so that no
// case crosses a boundary.
#include "support.hpp"

#include "../common/window_cases.hpp"

#include "core/once_per.hpp"

#include <doctest/doctest.h>

using simba::backend::Reply;
using simba::core::OncePer;
using simba::test::k_timeout;
using namespace simba::test;

namespace {

constexpr int64_t k_day = 86400000;

OncePer day_window(int64_t backend_now, bool retry = false) {
  OncePer o;
  o.period_ms = k_day;
  o.offset_ms = ((backend_now - 3600000) % k_day + k_day) % k_day;
  o.retry_failed = retry;
  return o;
}

} // namespace

TEST_CASE("acquire_once: the first in a window runs; the record closes it, also to another host") {
  auto b = open_test_backend();
  auto m = unique_mutex("once");
  OncePer o = day_window(require_ok(b->get(m, k_timeout)).observed.now);
  Reply a = require_ok(b->acquire_once(m, "A", 10000, 2000, o, "host-a", "h1", k_timeout));
  CHECK(a.observed.lease.owner_id == "A");
  REQUIRE(a.done);
  CHECK_FALSE(a.done->finished);
  CHECK(a.done->token == a.observed.lease.fencing_token);
  CHECK(a.done->window_start == simba::core::window_start(a.observed.now, o));
  // While it runs: busy, the record shown. (From B's own process, which
  // ends: on etcd a busy acquire keeps B's place in the queue until then.)
  {
    auto host_b = open_test_backend();
    Reply busy =
        require_ok(host_b->acquire_once(m, "B", 10000, 2000, o, "host-b", "h2", k_timeout));
    CHECK(busy.observed.lease.owner_id == "A");
  }
  Reply rel = require_ok(b->release_once(m, "A", a.observed.lease.fencing_token, 0, k_timeout));
  CHECK(rel.changed);
  REQUIRE(rel.done);
  CHECK(rel.done->finished);
  CHECK(rel.done->exit_code == 0);
  CHECK(rel.done->label == "host-a");
  CHECK(rel.done->host == "h1");
  // Later in the window: not acquired, the record says why.
  Reply late = require_ok(b->acquire_once(m, "C", 10000, 2000, o, "host-c", "h3", k_timeout));
  CHECK_FALSE(late.changed);
  CHECK(late.observed.lease.owner_id.empty());
  REQUIRE(late.done);
  CHECK(late.done->label == "host-a");
  Reply shown = require_ok(b->done_record(m, k_timeout));
  REQUIRE(shown.done);
  CHECK(shown.done->finished_at == rel.done->finished_at);
}

TEST_CASE("acquire_once: a failed run lets only --retry-failed in; the next window is open") {
  auto b = open_test_backend();
  auto m = unique_mutex("once-failed");
  int64_t now = require_ok(b->get(m, k_timeout)).observed.now;
  OncePer o = day_window(now);
  Reply a = require_ok(b->acquire_once(m, "A", 10000, 2000, o, "a", "h", k_timeout));
  require_ok(b->release_once(m, "A", a.observed.lease.fencing_token, 3, k_timeout));
  Reply no = require_ok(b->acquire_once(m, "B", 10000, 2000, o, "b", "h", k_timeout));
  CHECK(no.observed.lease.owner_id.empty());
  OncePer retry = day_window(now, true);
  Reply yes = require_ok(b->acquire_once(m, "C", 10000, 2000, retry, "c", "h", k_timeout));
  CHECK(yes.observed.lease.owner_id == "C");
  require_ok(b->release_once(m, "C", yes.observed.lease.fencing_token, 0, k_timeout));
  // Another window (an offset 12 h on): other terms, which a backend that
  // records them refuses while the recorded window lasts (issue 36 §3:
  // SQLite so far); one that does not (Redis, PostgreSQL) opens it.
  OncePer other = o;
  other.offset_ms = (o.offset_ms + k_day / 2) % k_day;
  Reply next = require_ok(b->acquire_once(m, "D", 10000, 2000, other, "d", "h", k_timeout));
  REQUIRE(next.done);
  if (next.done->period_ms != 0) {
    CHECK(next.observed.lease.owner_id.empty());
    CHECK(next.done->period_ms == o.period_ms);
    CHECK(next.done->offset_ms == o.offset_ms);
  } else {
    CHECK(next.observed.lease.owner_id == "D");
  }
}

TEST_CASE("guard_mark: renews like guard, reads and records the last run's start") {
  auto b = open_test_backend();
  auto m = unique_mutex("mark");
  Reply a = require_ok(b->acquire(m, "A", 10000, 2000, k_timeout));
  uint64_t token = a.observed.lease.fencing_token;
  Reply read = require_ok(b->guard_mark(m, "A", token, 10000, 2000, false, k_timeout));
  CHECK(read.changed);
  CHECK_FALSE(read.last_run_at);
  Reply rec = require_ok(b->guard_mark(m, "A", token, 10000, 2000, true, k_timeout));
  CHECK_FALSE(rec.last_run_at); // the value before
  Reply again = require_ok(b->guard_mark(m, "A", token, 10000, 2000, false, k_timeout));
  REQUIRE(again.last_run_at);
  CHECK(*again.last_run_at == rec.observed.now);
  // Not the owner: no renewal, nothing recorded.
  Reply other = require_ok(b->guard_mark(m, "B", token, 10000, 2000, true, k_timeout));
  CHECK_FALSE(other.changed);
  Reply after = require_ok(b->guard_mark(m, "A", token, 10000, 2000, false, k_timeout));
  REQUIRE(after.last_run_at);
  CHECK(*after.last_run_at == rec.observed.now);
}

// Issue 31 §1: the window judged is the contender's (OncePer::window: the
// one of the backend's now when it first reached it), every case of the
// shared table (tests/common/window_cases.hpp) on this backend.
TEST_CASE("acquire_once: the contender's window is judged, not now's (the shared table)") {
  auto b = open_test_backend();
  int64_t now = require_ok(b->get(unique_mutex("clock"), k_timeout)).observed.now;
  const OncePer base = day_window(now);
  const int64_t w0 = simba::core::window_start(now, base);
  auto window = [&](int periods) { return w0 + periods * k_day; };
  for (const JudgeCase& c : k_judge_cases) {
    std::string what = c.what;
    CAPTURE(what);
    auto m = unique_mutex("judge");
    if (c.record != k_no_record) {
      OncePer r = base;
      r.window = window(c.record);
      Reply run = require_ok(b->acquire_once(m, "R", 10000, 2000, r, "rec", "h0", k_timeout));
      REQUIRE(run.observed.lease.owner_id == "R");
      REQUIRE(run.done);
      CHECK(run.done->window_start == r.window);
      require_ok(
          b->release_once(m, "R", run.observed.lease.fencing_token, c.record_exit, k_timeout));
    }
    OncePer o = base;
    o.retry_failed = c.retry_failed;
    o.window = c.contender == k_window_of_now ? 0 : window(c.contender);
    Reply a = require_ok(b->acquire_once(m, "C", 10000, 2000, o, "con", "h1", k_timeout));
    CHECK((a.observed.lease.owner_id == "C") == c.runs);
    REQUIRE(a.done);
    if (c.runs) {
      // The record is of the contender's window, started now: a late run
      // shows by how much.
      int64_t judged = o.window != 0 ? o.window : w0;
      CHECK(a.done->window_start == judged);
      CHECK(a.done->label == "con");
      CHECK(a.done->started_at >= now);
      CHECK(a.done->period_ms == k_day);
      if (judged < w0)
        CHECK(simba::core::lateness(*a.done) >= now - (judged + k_day));
      else
        CHECK(simba::core::lateness(*a.done) == 0);
      require_ok(b->release_once(m, "C", a.observed.lease.fencing_token, 0, k_timeout));
    } else {
      CHECK(a.observed.lease.owner_id.empty());
      CHECK(a.done->label == "rec"); // unchanged
      CHECK(a.done->window_start == window(c.record));
    }
  }
}

// A lease of ours taken without a record (a plain acquire, a hand-over) is
// judged in our window too: a later window's record ends it.
TEST_CASE("acquire_once: our unrecorded lease is ended when a later window ran") {
  auto b = open_test_backend();
  auto m = unique_mutex("once-passed");
  int64_t now = require_ok(b->get(m, k_timeout)).observed.now;
  OncePer o = day_window(now);
  Reply run = require_ok(b->acquire_once(m, "R", 10000, 2000, o, "rec", "h0", k_timeout));
  require_ok(b->release_once(m, "R", run.observed.lease.fencing_token, 0, k_timeout));
  Reply plain = require_ok(b->acquire(m, "E", 10000, 2000, k_timeout));
  REQUIRE(plain.observed.lease.owner_id == "E");
  OncePer before = o;
  before.window = simba::core::window_start(now, o) - k_day;
  Reply a = require_ok(b->acquire_once(m, "E", 10000, 2000, before, "e", "h1", k_timeout));
  CHECK_FALSE(a.observed.lease.valid_at(a.observed.now));
  REQUIRE(a.done);
  CHECK(a.done->label == "rec");
  // The window of now (the record's) refuses it the same way; the window
  // before, with a free mutex: not taken either.
  Reply again = require_ok(b->acquire_once(m, "F", 10000, 2000, before, "f", "h2", k_timeout));
  CHECK(again.observed.lease.owner_id.empty());
}

// DESIGN §2 on the --once-per path too: a lease past its ttl but in its
// transition (its owner stopped renewing; its CMD may still run) is
// nobody else's until transition_at, even for a window that may run.
TEST_CASE("acquire_once: a lease in its transition is not taken, though the window may run") {
  auto a = open_test_backend();
  auto m = unique_mutex("once-transition");
  OncePer o = day_window(require_ok(a->get(m, k_timeout)).observed.now);
  Reply held = require_ok(a->acquire(m, "A", 200, 5000, k_timeout));
  REQUIRE(held.changed);
  sleep_ms(400); // past its ttl, 4.8 s before its transition_at
  auto b = open_test_backend(); // a process of its own (etcd: its place goes with it)
  Reply r = require_ok(b->acquire_once(m, "B", 10000, 2000, o, "b", "h", k_timeout));
  CHECK_FALSE(r.changed);
  CHECK(r.observed.lease.owner_id == "A");
  CHECK(r.observed.lease.fencing_token == held.observed.lease.fencing_token);
  CHECK(r.observed.now < held.observed.lease.transition_at);
}
