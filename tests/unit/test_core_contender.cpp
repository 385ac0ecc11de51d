#include "core/contender.hpp"
#include "core/names.hpp"
#include "core_support.hpp"
#include "fake_backend.hpp"
#include <algorithm>

#include <doctest/doctest.h>

#include <csignal>

using namespace simba;
using namespace simba::core;
using namespace simba::test;

namespace {

// A log line's level, or a notice's; nullopt: not a log action.
std::optional<LogLevel> log_level(const Action& a) {
  if (const auto* l = std::get_if<action::Log>(&a)) return l->level;
  if (const auto* n = std::get_if<action::Notice>(&a)) return n->level;
  return std::nullopt;
}

// Local clock == backend clock - offset; replies take `latency` ms.
struct Harness {
  test::FakeBackend backend;
  int64_t local = 5000; // local monotonic ms
  int64_t offset = 0;

  Harness() { offset = backend.now - local; }
  void advance(int64_t ms) {
    local += ms;
    backend.now += ms;
  }
  // Executes a call action as a reply after `latency` ms.
  Actions reply(Contender& c, const action::Call& call, int64_t latency = 0) {
    advance(latency);
    return c.on_reply(local, backend.apply("m", "me", call));
  }
};

// A reply as a backend that times leases on a steady clock but shows
// times on a wall clock that stepped by `step` ms (SQLite: CLOCK_BOOTTIME
// leases, wall-clock display): `now` and every time move together.
CallResult on_stepped_clock(CallResult r, int64_t step) {
  r.observed.now += step;
  r.observed.lease.acquired_at += step;
  r.observed.lease.ttl_at += step;
  r.observed.lease.transition_at += step;
  return r;
}

// An acquire's reply that shows the mutex in quarantine (lua/common.lua:
// no owner, revoked until transition_at).
CallResult quarantine_reply(Harness& h, const action::Call& call) {
  CallResult r = h.backend.apply("m", "me", call);
  r.observed.lease = Lease{};
  r.observed.lease.transition_at = r.observed.now + 5000;
  r.observed.lease.quarantine = true;
  return r;
}

} // namespace

TEST_SUITE("core::Contender") {
  TEST_CASE("a step of the backend's shown clock between replies moves no deadline and no wait") {
    for (int64_t step : {int64_t(3600000), int64_t(-3600000)}) {
      CAPTURE(step);
      Harness h;
      Contender c = make_contender(contender_config("me"));
      Actions a = c.start(h.local);
      a = h.reply(c, *find<action::Call>(a));
      REQUIRE(find<action::StartChild>(a));
      // The guard's reply comes from a clock an hour off: the same distances.
      h.advance(*c.wake_at() - h.local);
      a = c.on_timer(h.local);
      REQUIRE(find<action::Call>(a));
      int64_t sent = h.local;
      h.advance(5);
      a = c.on_reply(h.local,
                     on_stepped_clock(h.backend.apply("m", "me", *find<action::Call>(a)), step));
      CHECK_FALSE(find<action::SignalAll>(a));
      REQUIRE(find<action::SetDeadline>(a));
      CHECK(find<action::SetDeadline>(a)->deadline == sent + 12000 - safety_margin(10000, 2000));
      CHECK(*c.wake_at() == sent + 10000);
      CHECK(c.phase() == Contender::Phase::owning);

      // A waiter whose replies straddle the step waits out the lease's
      // distance in each reply, not the difference between two replies.
      Contender w = make_contender(contender_config("w"), 500);
      a = w.start(h.local);
      CallResult busy = h.backend.apply("m", "w", *find<action::Call>(a));
      a = w.on_reply(h.local, busy);
      CHECK(*w.wake_at() == h.local + 12000 + 500);
      h.advance(100);
      a = w.on_notify(h.local);
      REQUIRE(find<action::Call>(a));
      a = w.on_reply(h.local,
                     on_stepped_clock(h.backend.apply("m", "w", *find<action::Call>(a)), step));
      CHECK_FALSE(find<action::StartChild>(a));
      CHECK(*w.wake_at() == h.local + (h.backend.lease("m").transition_at - h.backend.now) + 500);
    }
  }

  TEST_CASE(
      "acquire, start CMD with a deadline from the send time, release, exit with CMD's status") {
    Harness h;
    Contender c = make_contender(contender_config("me"));
    Actions a = c.start(h.local);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::acquire);
    int64_t sent = h.local;
    a = h.reply(c, *find<action::Call>(a), 30);
    const auto* start = find<action::StartChild>(a);
    REQUIRE(start);
    // deadline = send_time + (transition_at - backend_now) - margin
    CHECK(start->deadline == sent + 12000 - safety_margin(10000, 2000));
    CHECK(safety_margin(10000, 2000) == 222);
    CHECK(start->lease.fencing_token == 1);
    CHECK(c.phase() == Contender::Phase::owning);
    // the guard is due at ttl_at (measured from the send time)
    CHECK(*c.wake_at() == sent + 10000);

    a = c.on_child_exit(h.local, 3, false);
    const auto* rel = find<action::Call>(a);
    REQUIRE(rel);
    CHECK(rel->op == Op::release);
    a = h.reply(c, *rel);
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 3);
    CHECK(!h.backend.lease("m").valid_at(h.backend.now));
  }

  // The backstop of docs/safety.md: a reply that took nothing (`changed`
  // false) never starts CMD, even one that shows our id on a valid lease
  // (the FIFO gate's refusal once showed a late owner its own ended lease,
  // moved on, as valid: an overlap in chaos/sentinel).
  TEST_CASE("an acquire or a grant that changed nothing never starts CMD, whatever owner it shows") {
    for (bool grant : {false, true}) {
      CAPTURE(grant);
      Harness h;
      Contender c = make_contender(contender_config("me"));
      Actions a = c.start(h.local);
      const auto* call = find<action::Call>(a);
      REQUIRE(call);
      CallResult r = h.backend.apply("m", "me", *call); // the backend gave it us...
      REQUIRE(r.changed);
      r.changed = false; // ...but says it did not
      if (grant) {
        c.on_reply(h.local, CallResult{}); // the acquire failed: contending, nothing in flight
        a = c.on_grant(h.local, r, h.local);
      } else {
        a = c.on_reply(h.local, r);
      }
      CHECK_FALSE(find<action::StartChild>(a));
      CHECK(c.phase() != Contender::Phase::owning);
      if (grant) { // the same grant, as a backend that took it for us sends it
        r.changed = true;
        a = c.on_grant(h.local, r, h.local);
      } else { // the waiter asks again when its wait ends; the renewal is a change
        h.advance(*c.wake_at() - h.local);
        Actions retry = c.on_timer(h.local);
        REQUIRE(find<action::Call>(retry));
        a = h.reply(c, *find<action::Call>(retry));
      }
      CHECK(find<action::StartChild>(a));
    }
  }

  TEST_CASE("busy: wait until transition_at + jitter; --no-wait exits with the conflict code") {
    Harness h;
    uint64_t held = h.backend.acquire("m", "other", 10000, 2000).observed.lease.fencing_token;
    h.advance(1000);
    Contender c = make_contender(contender_config("me"), 500);
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a));
    CHECK(!find<action::Call>(a));
    CHECK(!find<action::StartChild>(a));
    // once, a notice of what it waits for, in any log (level 0: info)
    REQUIRE(find<action::Notice>(a));
    CHECK(find<action::Notice>(a)->level == LogLevel::info);
    REQUIRE(find<action::Notice>(a));
    CHECK(find<action::Notice>(a)->notice.event == WaitNotice::Event::waiting);
    CHECK(find<action::Notice>(a)->notice.holder_id == "other");
    CHECK(*find<action::Notice>(a)->notice.held_ms == 1000);
    CHECK(*c.wake_at() == h.local + 11000 + 500);

    ContenderConfig nw = contender_config("me");
    nw.no_wait = true;
    nw.conflict_exit_code = 9;
    Contender d = make_contender(nw);
    a = d.start(h.local);
    a = h.reply(d, *find<action::Call>(a));
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 9);
    // the history hears of it: busy, the holder, its lease (issue 31 §1)
    REQUIRE(find<action::RecordSkipped>(a));
    CHECK(std::string(find<action::RecordSkipped>(a)->reason) == "busy");
    CHECK(find<action::RecordSkipped>(a)->by == "other");
    CHECK(find<action::RecordSkipped>(a)->token == held);
    CHECK(*find<action::RecordSkipped>(a)->held_ms == 1000);
  }

  TEST_CASE("--timeout gives up with the conflict code and holds nothing") {
    Harness h;
    h.backend.acquire("m", "other", 10000, 2000);
    ContenderConfig cfg = contender_config("me");
    cfg.wait_timeout_ms = 3000;
    Contender c = make_contender(cfg);
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a));
    CHECK(*c.wake_at() == h.local + 3000);
    h.advance(3000);
    a = c.on_timer(h.local);
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 75);
    CHECK(!find<action::Call>(a));
    REQUIRE(find<action::RecordSkipped>(a));
    CHECK(std::string(find<action::RecordSkipped>(a)->reason) == "timeout");
    CHECK(find<action::RecordSkipped>(a)->by == "other");
    CHECK(find<action::RecordSkipped>(a)->waited_ms == 3000);
  }

  TEST_CASE("a quarantine is never the conflict code: --no-wait and --timeout exit 69 saying why") {
    Harness h;
    ContenderConfig nw = contender_config("me");
    nw.no_wait = true;
    nw.conflict_exit_code = 0; // the cron recipe: busy is not a failure
    Contender d = make_contender(nw);
    Actions a = d.start(h.local);
    a = d.on_reply(h.local, quarantine_reply(h, *find<action::Call>(a)));
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 69);
    REQUIRE(find<action::Notice>(a));
    CHECK(find<action::Notice>(a)->level == LogLevel::error);
    CHECK(find<action::Notice>(a)->notice.quarantine);

    ContenderConfig to = contender_config("me");
    to.wait_timeout_ms = 3000;
    to.conflict_exit_code = 0;
    Contender t = make_contender(to);
    a = t.start(h.local);
    a = t.on_reply(h.local, quarantine_reply(h, *find<action::Call>(a)));
    CHECK(!find<action::Exit>(a)); // it waits, as for a holder
    h.advance(3000);
    a = t.on_timer(h.local);
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 69);
    REQUIRE(find<action::Notice>(a));
    CHECK(find<action::Notice>(a)->notice.quarantine);
    CHECK(!find<action::RecordSkipped>(a)); // unavailable: not a skipped run
  }

  TEST_CASE("a release notification makes a waiter try at once") {
    Harness h;
    h.backend.acquire("m", "other", 10000, 2000);
    Contender c = make_contender(contender_config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a));
    h.advance(50);
    h.backend.release("m", "other");
    a = c.on_notify(h.local);
    REQUIRE(find<action::Call>(a));
    a = h.reply(c, *find<action::Call>(a));
    CHECK(find<action::StartChild>(a));
  }

  TEST_CASE(
      "a hand-over starts CMD without a call, the deadline counted from the grant's send time") {
    Harness h;
    h.backend.acquire("m", "other", 10000, 2000);
    Contender c = make_contender(contender_config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a));
    int64_t subscribed = h.local; // what the backend reports as the send time
    h.advance(3000);
    // The release makes us the owner; the message reaches us 40 ms later.
    h.backend.release("m", "other");
    core::CallResult g = h.backend.acquire("m", "me", 10000, 2000);
    h.advance(40);
    a = c.on_grant(h.local, g, subscribed);
    CHECK(!find<action::Call>(a));
    const auto* start = find<action::StartChild>(a);
    REQUIRE(start);
    // From the send time, not the arrival: 3040 ms of the lease are gone.
    CHECK(start->deadline == subscribed + 12000 - safety_margin(10000, 2000));
    CHECK(c.phase() == Contender::Phase::owning);
    CHECK(*c.wake_at() <= subscribed + 10000); // the guard, also from then
    // Once owner, a second one changes nothing.
    CHECK(c.on_grant(h.local, g, subscribed).empty());
  }

  TEST_CASE("a hand-over that leaves less than half a ttl before the kill point renews before CMD "
            "starts") {
    for (int64_t waited : {6000, 7000}) {
      CAPTURE(waited);
      Harness h;
      h.backend.acquire("m", "other", 10000, 2000);
      Contender c = make_contender(contender_config("me"));
      Actions a = c.start(h.local);
      a = h.reply(c, *find<action::Call>(a));
      int64_t subscribed = h.local;
      h.advance(waited);
      h.backend.release("m", "other");
      core::CallResult g = h.backend.acquire("m", "me", 10000, 2000);
      a = c.on_grant(h.local, g, subscribed);
      // 12000 - 222 - 1000 - waited left before the kill point: 4778 at 6 s
      // (less than 5000: renew first), 3778 at 7 s.
      CHECK(!find<action::StartChild>(a));
      REQUIRE(find<action::Call>(a));
      CHECK(find<action::Call>(a)->op == Op::acquire);
      a = h.reply(c, *find<action::Call>(a), 10);
      REQUIRE(find<action::StartChild>(a));
      CHECK(find<action::StartChild>(a)->deadline ==
            h.local - 10 + 12000 - safety_margin(10000, 2000));
    }
  }

  TEST_CASE("a hand-over counted from long ago renews before CMD starts; one during a call waits "
            "for its reply") {
    Harness h;
    h.backend.acquire("m", "other", 10000, 2000);
    Contender c = make_contender(contender_config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a));
    int64_t subscribed = h.local;
    h.advance(11500); // past the kill point the grant's lease would have
    h.backend.release("m", "other");
    core::CallResult g = h.backend.acquire("m", "me", 10000, 2000);
    a = c.on_grant(h.local, g, subscribed);
    CHECK(!find<action::StartChild>(a));
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::acquire); // a renewal
    a = h.reply(c, *find<action::Call>(a), 10);
    REQUIRE(find<action::StartChild>(a));
    CHECK(find<action::StartChild>(a)->deadline ==
          h.local - 10 + 12000 - safety_margin(10000, 2000));

    // A waiter whose own try is in flight ignores the grant: the reply tells.
    Harness h2;
    h2.backend.acquire("m", "other", 10000, 2000);
    Contender d = make_contender(contender_config("me"));
    a = d.start(h2.local);
    a = h2.reply(d, *find<action::Call>(a));
    a = d.on_notify(h2.local); // tries again
    REQUIRE(find<action::Call>(a));
    h2.backend.release("m", "other");
    core::CallResult g2 = h2.backend.acquire("m", "me", 10000, 2000);
    CHECK(d.on_grant(h2.local, g2, h2.local).empty());
    CHECK(d.phase() == Contender::Phase::contending);
    a = h2.reply(d, *find<action::Call>(a));
    CHECK(find<action::StartChild>(a));
  }

  TEST_CASE("a grant the contender does not take goes back: a release with the grant's token") {
    // A waiter (c), and the grant a release made for it.
    Harness h;
    h.backend.acquire("m", "other", 10000, 2000);
    Contender c = make_contender(contender_config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a)); // busy: waits
    int64_t subscribed = h.local;
    h.backend.release("m", "other");
    core::CallResult g = h.backend.acquire("m", "me", 10000, 2000);
    REQUIRE(g.observed.lease.fencing_token == 2);
    // Draining a CMD that ran under another lease: not a waiter any more.
    Harness h2;
    Contender d = make_contender(contender_config("me"));
    a = h2.reply(d, *find<action::Call>(d.start(h2.local)));
    REQUIRE(find<action::StartChild>(a));
    a = d.on_child_exit(h2.local, 0, true); // it left something running
    REQUIRE(d.phase() == Contender::Phase::draining);
    a = d.on_grant(h2.local, g, subscribed);
    REQUIRE(a.size() == 1);
    const auto* back = find<action::Disown>(a);
    REQUIRE(back);
    CHECK(back->token == 2); // the grant's, not the lease we drain (1)
    CHECK(back->timeout_ms == contender_config("me").call_timeout_ms);
    CHECK(d.phase() == Contender::Phase::draining);

    // A grant that is not ours (not ok, or shows another owner) while we
    // wait: the same, since nobody else could have that lease meanwhile.
    CallResult failed = g;
    failed.status = CallResult::Status::failed;
    a = c.on_grant(h.local, failed, subscribed);
    REQUIRE(find<action::Disown>(a));
    CHECK(find<action::Disown>(a)->token == 2);
    CHECK(c.phase() == Contender::Phase::contending);

    // An owner keeps it (no release), and so does a contender whose call in
    // flight will tell it of the lease.
    Harness h3;
    Contender e = make_contender(contender_config("me"));
    a = h3.reply(e, *find<action::Call>(e.start(h3.local)));
    REQUIRE(e.phase() == Contender::Phase::owning);
    CHECK(e.on_grant(h3.local, g, subscribed).empty());
    a = c.on_notify(h.local);
    REQUIRE(find<action::Call>(a));
    CHECK(c.on_grant(h.local, g, subscribed).empty());
  }

  TEST_CASE("a late grant of the lease our own acquire took is kept while CMD's leftovers are "
            "stopped (no release): it ends only with our own release") {
    for (bool by_signal : {false, true}) {
      CAPTURE(by_signal);
      Harness h;
      h.backend.acquire("m", "other", 10000, 2000);
      Contender c = make_contender(contender_config("me"));
      Actions a = c.start(h.local);
      a = h.reply(c, *find<action::Call>(a)); // busy: waits
      int64_t subscribed = h.local;
      // The release hands the lease to us; its message is slow to come.
      h.backend.release("m", "other");
      core::CallResult g = h.backend.acquire("m", "me", 10000, 2000);
      // Our own try comes first: a renewal of the handed lease.
      a = c.on_notify(h.local);
      REQUIRE(find<action::Call>(a));
      a = h.reply(c, *find<action::Call>(a));
      REQUIRE(find<action::StartChild>(a));
      REQUIRE(c.phase() == Contender::Phase::owning);
      // CMD ends leaving a daemon, on its own or stopped by a signal.
      if (by_signal) a = c.on_signal(h.local, SIGTERM);
      a = c.on_child_exit(h.local, by_signal ? 128 + SIGTERM : 0, true);
      REQUIRE(c.phase() != Contender::Phase::owning);
      REQUIRE(c.phase() != Contender::Phase::releasing);
      // The late grant: same token as the lease we hold. Giving it back
      // would pass the mutex on while the daemon or CMD still runs.
      h.advance(30);
      a = c.on_grant(h.local, g, subscribed);
      CHECK(!find<action::Disown>(a));
      CHECK(!find<action::Call>(a));
      // Everything gone: now our release ends it, with that token.
      a = c.on_all_gone(h.local);
      const auto* rel = find<action::Call>(a);
      REQUIRE(rel);
      CHECK(rel->op == Op::release);
    }
  }

  TEST_CASE("an emergency stop releases whatever lease our id holds, and ends the contender") {
    for (bool owner : {false, true}) {
      CAPTURE(owner);
      Harness h;
      if (!owner) h.backend.acquire("m", "other", 10000, 2000);
      Contender c = make_contender(contender_config("me"));
      Actions a = c.start(h.local);
      if (owner) {
        a = h.reply(c, *find<action::Call>(a));
        REQUIRE(c.phase() == Contender::Phase::owning);
      } // else: the acquire is in flight, its answer unknown
      action::Disown d = c.on_emergency();
      CHECK(d.token == 0);
      CHECK(d.timeout_ms == 1000);
      CHECK(c.phase() == Contender::Phase::done);
      CHECK(!c.call_in_flight());
      CHECK(!c.wake_at());
    }
  }

  TEST_CASE("guard at ttl_at renews and moves the watchdog deadline") {
    Harness h;
    Contender c = make_contender(contender_config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a));
    int64_t first_deadline = find<action::StartChild>(a)->deadline;
    h.advance(*c.wake_at() - h.local);
    a = c.on_timer(h.local);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::guard);
    a = h.reply(c, *find<action::Call>(a), 5);
    REQUIRE(find<action::SetDeadline>(a));
    CHECK(find<action::SetDeadline>(a)->deadline > first_deadline);
    CHECK(h.backend.lease("m").fencing_token == 1);
  }

  TEST_CASE("failed guards retry every 250 ms; kill signal at deadline - kill_after, SIGKILL at "
            "the deadline") {
    Harness h;
    Contender c = make_contender(contender_config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a));
    int64_t deadline = find<action::StartChild>(a)->deadline;
    h.advance(*c.wake_at() - h.local);
    int guards = 0;
    bool stopped = false;
    for (int turn = 0; !stopped; ++turn) {
      REQUIRE_MESSAGE(turn < 100, "no kill signal after 100 timer turns"); // bounded, not a hang
      a = c.on_timer(h.local);
      if (const auto* call = find<action::Call>(a)) {
        ++guards;
        CHECK(call->op == Op::guard);
        CHECK(h.local + call->timeout_ms <= deadline - 1000); // never past the kill point
        CallResult fail;
        fail.status = CallResult::Status::failed;
        fail.error = "busy";
        a = c.on_reply(h.local, fail);
        CHECK(*c.wake_at() - h.local <= 250);
      }
      if (const auto* sig = find<action::SignalAll>(a)) {
        CHECK(sig->signo == SIGTERM);
        CHECK(h.local == deadline - 1000);
        stopped = true;
        break;
      }
      h.advance(*c.wake_at() - h.local);
    }
    CHECK(guards >= 3);
    CHECK(c.phase() == Contender::Phase::stopping);
    CHECK(*c.wake_at() == deadline);
    h.advance(1000);
    a = c.on_timer(h.local);
    REQUIRE(find<action::SignalAll>(a));
    CHECK(find<action::SignalAll>(a)->signo == SIGKILL);
    a = c.on_child_exit(h.local, 137, false);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::release);
    a = h.reply(c, *find<action::Call>(a));
    CHECK(find<action::Exit>(a)->code == 76);
  }

  TEST_CASE("a reply showing another owner or no lease stops CMD at once (exit 76)") {
    for (bool forced : {true, false}) {
      CAPTURE(forced);
      Harness h;
      Contender c = make_contender(contender_config("me"));
      Actions a = c.start(h.local);
      a = h.reply(c, *find<action::Call>(a));
      h.advance(100);
      if (forced) {
        h.backend.force_release("m");
      } else {
        h.backend.steal("m", "thief", 10000, 2000);
      }
      a = c.on_notify(h.local); // the forced release notifies the owner too
      REQUIRE(find<action::Call>(a));
      a = h.reply(c, *find<action::Call>(a));
      REQUIRE(find<action::SignalAll>(a));
      CHECK(find<action::SignalAll>(a)->signo == SIGTERM);
      CHECK(*c.wake_at() == h.local + 1000); // SIGKILL after kill_after
      a = c.on_child_exit(h.local + 10, 143, false);
      a = h.reply(c, *find<action::Call>(a));
      CHECK(find<action::Exit>(a)->code == 76);
      if (!forced) CHECK(h.backend.lease("m").owner_id == "thief");
    }
  }

  TEST_CASE("an indeterminate acquire never starts CMD; asking again learns the truth") {
    Harness h;
    Contender c = make_contender(contender_config("me"));
    Actions a = c.start(h.local);
    h.backend.apply("m", "me", *find<action::Call>(a)); // applied, but the answer was lost
    CallResult lost;
    lost.status = CallResult::Status::indeterminate;
    lost.error = "timeout";
    a = c.on_reply(h.local + 2000, lost);
    CHECK(!find<action::StartChild>(a));
    h.advance(2000 + 250); // asks again after a retry period
    a = c.on_timer(h.local);
    REQUIRE(find<action::Call>(a));
    a = h.reply(c, *find<action::Call>(a));
    REQUIRE(find<action::StartChild>(a));
    CHECK(find<action::StartChild>(a)->lease.fencing_token == 1); // renewal of the same lease
  }

  TEST_CASE("what CMD left running is stopped before the release") {
    Harness h;
    Contender c = make_contender(contender_config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a));
    a = c.on_child_exit(h.local, 0, true);
    REQUIRE(find<action::SignalAll>(a));
    CHECK(!find<action::Call>(a));
    CHECK(h.backend.lease("m").valid_at(h.backend.now));
    h.advance(1000);
    a = c.on_timer(h.local);
    REQUIRE(find<action::SignalAll>(a));
    CHECK(find<action::SignalAll>(a)->signo == SIGKILL);
    a = c.on_all_gone(h.local);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::release);
  }

  TEST_CASE("--min-hold keeps the lease until acquired_at + D and exits at once") {
    Harness h;
    ContenderConfig cfg = contender_config("me");
    cfg.min_hold_ms = 60000;
    Contender c = make_contender(cfg);
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a));
    int64_t acquired = h.backend.lease("m").acquired_at;
    h.advance(1000);
    a = c.on_child_exit(h.local, 4, false);
    const auto* hold = find<action::Call>(a);
    REQUIRE(hold);
    CHECK(hold->op == Op::hold); // the backend marks the lease as only held
    CHECK(hold->token == h.backend.lease("m").fencing_token);
    a = h.reply(c, *hold);
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 4);
    CHECK(h.backend.lease("m").transition_at == acquired + 60000);
    CHECK(h.backend.lease("m").holding);
    h.advance(60000 - 1000 - 1);
    CHECK(h.backend.lease("m").valid_at(h.backend.now));
    h.advance(2);
    CHECK(!h.backend.lease("m").valid_at(h.backend.now));
  }

  TEST_CASE("--min-hold already over: release as usual") {
    Harness h;
    ContenderConfig cfg = contender_config("me");
    cfg.min_hold_ms = 500;
    Contender c = make_contender(cfg);
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a));
    h.advance(1000);
    a = c.on_child_exit(h.local, 0, false);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::release);
  }

  TEST_CASE("signals: cancel the wait (128+N, nothing held); forwarded while CMD runs") {
    Harness h;
    h.backend.acquire("m", "other", 10000, 2000);
    Contender c = make_contender(contender_config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a));
    CHECK(c.on_signal(h.local, SIGWINCH).empty());
    a = c.on_signal(h.local, SIGINT);
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 128 + SIGINT);

    Harness h2;
    Contender d = make_contender(contender_config("me"));
    a = d.start(h2.local);
    a = h2.reply(d, *find<action::Call>(a));
    a = d.on_signal(h2.local, SIGUSR1);
    REQUIRE(find<action::SignalChild>(a));
    CHECK(find<action::SignalChild>(a)->signo == SIGUSR1);
    CHECK(d.phase() == Contender::Phase::owning);
  }

  TEST_CASE("a stop signal while the acquire is in flight wins over the reply that grants the "
            "lease: CMD never starts, the lease goes back, 128+N") {
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
      CAPTURE(sig);
      Harness h;
      Contender c = make_contender(contender_config("me"));
      Actions a = c.start(h.local);
      action::Call acquire = *find<action::Call>(a);
      CHECK(c.on_signal(h.local + 1, sig).empty()); // the reply decides what to release
      a = h.reply(c, acquire, 5);                   // it grants the lease
      CHECK_FALSE(find<action::StartChild>(a));
      REQUIRE(find<action::Call>(a));
      CHECK(find<action::Call>(a)->op == Op::release);
      a = h.reply(c, *find<action::Call>(a));
      CHECK_FALSE(find<action::StartChild>(a));
      REQUIRE(find<action::Exit>(a));
      CHECK(find<action::Exit>(a)->code == 128 + sig);
      CHECK(!h.backend.lease("m").valid_at(h.backend.now));
    }
  }

  TEST_CASE("a signal while an indeterminate acquire may hold the lease releases it") {
    Harness h;
    Contender c = make_contender(contender_config("me"));
    Actions a = c.start(h.local);
    h.backend.apply("m", "me", *find<action::Call>(a));
    CallResult lost;
    lost.status = CallResult::Status::indeterminate;
    a = c.on_reply(h.local, lost);
    a = c.on_signal(h.local, SIGTERM);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::release);
    a = h.reply(c, *find<action::Call>(a));
    CHECK(find<action::Exit>(a)->code == 128 + SIGTERM);
    CHECK(!h.backend.lease("m").valid_at(h.backend.now));
  }
}

TEST_SUITE("core::Contender") {
  TEST_CASE("CMD's exit noticed after the kill point counts as a lost lease (exit 76)") {
    Harness h;
    Contender c = make_contender(contender_config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a));
    int64_t deadline = find<action::StartChild>(a)->deadline;
    h.advance(deadline - h.local + 5); // simba was stopped; the watchdog killed CMD
    a = c.on_child_exit(h.local, 137, false);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::release);
    a = h.reply(c, *find<action::Call>(a));
    CHECK(find<action::Exit>(a)->code == 76);
  }
}

TEST_SUITE("core::Contender") {
  TEST_CASE("a forced release revokes: the owner stops at once, waiters get in only when the old "
            "lease would have ended") {
    Harness h;
    Contender owner = make_contender(contender_config("me"));
    Actions a = owner.start(h.local);
    a = h.reply(owner, *find<action::Call>(a));
    int64_t old_end = h.backend.lease("m").transition_at;
    h.advance(100);
    CHECK(h.backend.force_release("m").changed);
    // a waiter is refused until the revoked lease's transition_at
    CHECK_FALSE(h.backend.acquire("m", "waiter", 10000, 2000).changed);
    Contender waiter = make_contender(contender_config("waiter"));
    Actions w = waiter.start(h.local);
    w = waiter.on_reply(h.local, h.backend.apply("m", "waiter", *find<action::Call>(w)));
    CHECK(!find<action::StartChild>(w));
    CHECK(*waiter.wake_at() - h.local == old_end - h.backend.now); // jitter 0
    // the owner learns it at once (notification) and stops its CMD
    a = owner.on_notify(h.local);
    a = h.reply(owner, *find<action::Call>(a));
    REQUIRE(find<action::SignalAll>(a));
    CHECK(find<action::SignalAll>(a)->signo == SIGTERM);
    h.advance(old_end - h.backend.now);
    CHECK(h.backend.acquire("m", "waiter", 10000, 2000).changed);
  }
}

TEST_SUITE("core::Contender") {
  TEST_CASE("--no-wait does not wait on a backend that does not answer: one more try, then 69") {
    Harness h;
    ContenderConfig cfg = contender_config("me");
    cfg.no_wait = true;
    Contender c = make_contender(cfg);
    Actions a = c.start(h.local);
    CallResult lost;
    lost.status = CallResult::Status::indeterminate;
    lost.error = "timeout";
    a = c.on_reply(h.local, lost);
    CHECK(!find<action::Exit>(a));
    h.advance(250); // a retry period
    a = c.on_timer(h.local);
    REQUIRE(find<action::Call>(a));
    a = c.on_reply(h.local + 2000, lost);
    // the acquire may have been applied: release (best effort), then exit 69
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::release);
    a = c.on_reply(h.local + 2000, lost);
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 69);
  }

  TEST_CASE(
      "asked to stop by TERM/INT/HUP, simba ends by that signal when the exit code is 128+N") {
    // CMD died of the forwarded TERM: the exit action says "end by SIGTERM".
    Harness h;
    Contender c = make_contender(contender_config("me"));
    Actions a = h.reply(c, *find<action::Call>(c.start(h.local)));
    REQUIRE(find<action::StartChild>(a));
    a = c.on_signal(h.local, SIGTERM);
    REQUIRE(find<action::SignalChild>(a));
    a = c.on_child_exit(h.local, 128 + SIGTERM, false);
    a = h.reply(c, *find<action::Call>(a)); // the release
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 128 + SIGTERM);
    CHECK(find<action::Exit>(a)->signo == SIGTERM);

    // CMD handled it and exited 0: a plain exit 0.
    Harness h2;
    Contender d = make_contender(contender_config("me"));
    a = h2.reply(d, *find<action::Call>(d.start(h2.local)));
    d.on_signal(h2.local, SIGTERM);
    a = h2.reply(d, *find<action::Call>(d.on_child_exit(h2.local, 0, false)));
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 0);
    CHECK(find<action::Exit>(a)->signo == 0);

    // Waiting: cancelled by INT, ends by SIGINT. USR1 cancels with 138 but
    // is no request to stop: a plain exit.
    for (int sig : {SIGINT, SIGUSR1}) {
      Harness h3;
      h3.backend.acquire("m", "other", 10000, 2000);
      Contender w = make_contender(contender_config("me"));
      h3.reply(w, *find<action::Call>(w.start(h3.local)));
      a = w.on_signal(h3.local, sig);
      REQUIRE(find<action::Exit>(a));
      CHECK(find<action::Exit>(a)->code == 128 + sig);
      CHECK(find<action::Exit>(a)->signo == (sig == SIGINT ? SIGINT : 0));
    }

    // QUIT: its default action dumps a core: exit 131, no signal.
    Harness h4;
    h4.backend.acquire("m", "other", 10000, 2000);
    Contender q = make_contender(contender_config("me"));
    h4.reply(q, *find<action::Call>(q.start(h4.local)));
    a = q.on_signal(h4.local, SIGQUIT);
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->signo == 0);
  }

  TEST_CASE("a second TERM while CMD still runs starts the kill sequence") {
    Harness h;
    Contender c = make_contender(contender_config("me"));
    Actions a = h.reply(c, *find<action::Call>(c.start(h.local)));
    a = c.on_signal(h.local, SIGTERM);
    REQUIRE(find<action::SignalChild>(a)); // forwarded, CMD ignores it
    CHECK(!find<action::SignalAll>(a));
    h.advance(300);
    a = c.on_signal(h.local, SIGTERM);
    const auto* kill = find<action::SignalAll>(a);
    REQUIRE(kill);
    CHECK(kill->signo == SIGTERM); // the kill signal, to the whole tree
    CHECK(*c.wake_at() == h.local + 1000);
    // A third one meanwhile changes nothing: the sequence runs.
    CHECK(!find<action::SignalAll>(c.on_signal(h.local + 100, SIGTERM)));
    h.advance(1000);
    a = c.on_timer(h.local);
    REQUIRE(find<action::SignalAll>(a));
    CHECK(find<action::SignalAll>(a)->signo == SIGKILL);
  }
}

TEST_SUITE("core::Contender identity") {
  // Two simba processes given one --contender-id (label): each has its own
  // owner id (label#instance), and the owner compares id and token.
  TEST_CASE("our label with another instance, or our id with another token, is a lost lease (76)") {
    for (bool same_id : {false, true}) {
      CAPTURE(same_id);
      Harness h;
      const std::string mine = make_owner_id("web1", 0x1111);
      const std::string theirs = make_owner_id("web1", 0x2222);
      ContenderConfig cfg = contender_config(mine);
      cfg.label = "web1";
      Contender c = make_contender(cfg);
      Actions a = c.start(h.local);
      a = c.on_reply(h.local, h.backend.apply("m", mine, *find<action::Call>(a)));
      REQUIRE(find<action::StartChild>(a));
      uint64_t token = find<action::StartChild>(a)->lease.fencing_token;
      // The other process with our label is no renewal of our lease.
      CHECK_FALSE(h.backend.acquire("m", theirs, 10000, 2000).changed);

      // Our lease goes behind our back: to the other instance, or (a stale
      // request of ours applied late) to our own id with a new token.
      h.advance(100);
      h.backend.steal("m", same_id ? mine : theirs, 10000, 2000);
      uint64_t stolen = h.backend.lease("m").fencing_token;
      h.advance(*c.wake_at() - h.local);
      a = c.on_timer(h.local);
      REQUIRE(find<action::Call>(a));
      CHECK(find<action::Call>(a)->op == Op::guard);
      CHECK(find<action::Call>(a)->token == token);
      a = c.on_reply(h.local, h.backend.apply("m", mine, *find<action::Call>(a)));
      REQUIRE(find<action::SignalAll>(a));
      CHECK(find<action::SignalAll>(a)->signo == SIGTERM);
      CHECK(c.phase() == Contender::Phase::stopping);

      a = c.on_child_exit(h.local + 10, 143, false);
      REQUIRE(find<action::Call>(a));
      CHECK(find<action::Call>(a)->op == Op::release);
      CHECK(find<action::Call>(a)->token == token); // only the lease we held
      a = c.on_reply(h.local, h.backend.apply("m", mine, *find<action::Call>(a)));
      REQUIRE(find<action::Exit>(a));
      CHECK(find<action::Exit>(a)->code == 76);
      // The lease that took ours over is still there.
      CHECK(h.backend.lease("m").owner_id == (same_id ? mine : theirs));
      CHECK(h.backend.lease("m").fencing_token == stolen);
      CHECK(h.backend.lease("m").valid_at(h.backend.now));
    }
  }

  TEST_CASE("a waiter says when the holder is another process with its label") {
    Harness h;
    h.backend.acquire("m", make_owner_id("web1", 2), 10000, 2000);
    ContenderConfig cfg = contender_config(make_owner_id("web1", 1));
    cfg.label = "web1";
    Contender c = make_contender(cfg);
    Actions a = c.start(h.local);
    a = c.on_reply(h.local, h.backend.apply("m", cfg.contender_id, *find<action::Call>(a)));
    CHECK(!find<action::StartChild>(a));
    REQUIRE(find<action::Notice>(a));
    REQUIRE(find<action::Notice>(a));
    CHECK(find<action::Notice>(a)->notice.holder_id == "web1#0000000000000002");
    CHECK(find<action::Notice>(a)->notice.holder_has_our_label);
  }

  TEST_CASE(
      "a release names the lease it held; after an acquire with no answer, any lease of ours (0)") {
    Harness h;
    Contender c = make_contender(contender_config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find<action::Call>(a));
    uint64_t token = find<action::StartChild>(a)->lease.fencing_token;
    a = c.on_child_exit(h.local, 0, false);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->token == token);

    Harness h2;
    h2.backend.steal("m", "me", 100, 100); // an older lease of ours, long over
    h2.advance(1000);
    Contender d = make_contender(contender_config("me"));
    a = d.start(h2.local);
    h2.backend.apply("m", "me", *find<action::Call>(a)); // applied, the answer lost
    CallResult lost;
    lost.status = CallResult::Status::indeterminate;
    a = d.on_reply(h2.local, lost);
    a = d.on_signal(h2.local, SIGINT);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->token == 0);
    a = h2.reply(d, *find<action::Call>(a));
    CHECK_FALSE(h2.backend.lease("m").valid_at(h2.backend.now));
  }
}

TEST_SUITE("core::Contender") {
  // A backend slower than the lease, or one that keeps timing out, must not
  // be asked in a loop: with the retry at once, `simba run --ttl 1ms
  // --transition 1ms` spun a core and grew the WAL to gigabytes.
  TEST_CASE("a retry after a too-late or unknown acquire reply waits a retry period") {
    for (bool unknown : {false, true}) {
      CAPTURE(unknown);
      Harness h;
      ContenderConfig cfg = contender_config("me");
      Contender c = make_contender(cfg);
      Actions a = c.start(h.local);
      REQUIRE(find<action::Call>(a));
      if (unknown) {
        h.backend.apply("m", "me", *find<action::Call>(a)); // applied; the answer is lost
        CallResult lost;
        lost.status = CallResult::Status::indeterminate;
        lost.error = "timeout";
        h.advance(cfg.call_timeout_ms);
        a = c.on_reply(h.local, lost);
      } else {
        // The reply comes after the kill point of the lease it grants.
        int64_t life = cfg.ttl_ms + cfg.transition_ms -
                       safety_margin(cfg.ttl_ms, cfg.transition_ms) - cfg.kill_after_ms;
        a = h.reply(c, *find<action::Call>(a), life + 1);
      }
      CHECK(!find<action::StartChild>(a));
      CHECK(!find<action::Call>(a));
      CHECK(c.phase() == Contender::Phase::contending);
      REQUIRE(c.wake_at());
      CHECK(*c.wake_at() == h.local + cfg.retry_ms);
      CHECK(c.on_timer(h.local + cfg.retry_ms - 1).empty());
      h.advance(cfg.retry_ms);
      a = c.on_timer(h.local);
      REQUIRE(find<action::Call>(a));
      CHECK(find<action::Call>(a)->op == Op::acquire);
      // In time now: a renewal of the same lease, and CMD starts.
      a = h.reply(c, *find<action::Call>(a), 10);
      REQUIRE(find<action::StartChild>(a));
      CHECK(find<action::StartChild>(a)->lease.fencing_token == 1);
    }
  }

  // Issue 13 §1: a failing backend while waiting (a full disk, a Redis that
  // died, an error that never goes away) was asked four times a second
  // forever, a warning per try, and --timeout then said "busy" (75).
  TEST_CASE("a waiter's failing acquire backs off to the cap with jitter, warns once, says when it "
            "answers again") {
    for (bool unknown : {false, true}) {
      CAPTURE(unknown);
      Harness h;
      h.backend.acquire("m", "other", 10000, 2000);
      ContenderConfig cfg = contender_config("me");
      Contender c = make_contender(cfg, 1'000'000); // a pinned jitter: the highest the range allows
      Actions a = c.start(h.local);
      CallResult bad;
      bad.status = unknown ? CallResult::Status::indeterminate : CallResult::Status::failed;
      bad.error = "database or disk is full";
      std::vector<int64_t> delays;
      int warnings = 0;
      for (int i = 0; i < 9; ++i) {
        REQUIRE(find<action::Call>(a));
        h.advance(3);
        a = c.on_reply(h.local, bad);
        CHECK(!find<action::Call>(a));
        for (const auto& x : a) {
          auto level = log_level(x);
          if (!level) continue;
          if (*level >= LogLevel::warning) ++warnings;
          if (i == 0) {
            const auto* n = std::get_if<action::Notice>(&x);
            REQUIRE(n);
            CHECK(n->notice.event == WaitNotice::Event::backend_failing);
            CHECK(n->notice.error.find("database or disk is full") != std::string::npos);
          } else {
            CHECK(*level == LogLevel::verbose); // -v only
          }
        }
        // a notification does not cut the back-off short
        CHECK(c.on_notify(h.local + 1).empty());
        REQUIRE(c.wake_at());
        delays.push_back(*c.wake_at() - h.local);
        h.backend.acquire("m", "other", 10000, 2000); // the holder renews meanwhile
        h.advance(delays.back());
        a = c.on_timer(h.local);
      }
      CHECK(warnings == 1);
      // 250 doubling, each plus up to half of it, never above 5 s
      CHECK(delays.front() == 250 + 125);
      for (size_t i = 1; i < delays.size(); ++i) CHECK(delays[i] >= delays[i - 1]);
      CHECK(delays.back() >= 4900);
      CHECK(*std::max_element(delays.begin(), delays.end()) <= cfg.backoff_max_ms);
      // The backend answers again: one line, and the wait goes on as before.
      REQUIRE(find<action::Call>(a));
      a = h.reply(c, *find<action::Call>(a), 3);
      int back = 0;
      for (const auto& x : a) {
        const auto* n = std::get_if<action::Notice>(&x);
        if (n && n->notice.event == WaitNotice::Event::backend_back) ++back;
      }
      CHECK(back == 1);
      CHECK(*c.wake_at() ==
            h.local + (h.backend.lease("m").transition_at - h.backend.now) + 1'000'000);
    }
  }

  TEST_CASE(
      "the back-off: at least the retry period, doubling, jitter within half of it, the cap kept") {
    for (int64_t pin : {int64_t(0), int64_t(-5), int64_t(1'000'000)}) {
      ContendPeriod p("me", [pin](int64_t, int64_t) { return pin; });
      for (int n = 1; n < 40; ++n) {
        int64_t d = p.backoff_delay(n, 250, 5000);
        CHECK(d >= 250);
        CHECK(d <= 5000);
      }
      CHECK(p.backoff_delay(1, 250, 5000) == (pin > 0 ? 375 : 250));
      CHECK(p.backoff_delay(2, 250, 5000) == (pin > 0 ? 750 : 500));
    }
    // a drawn jitter stays in [0, d/2]: the range asked for
    ContendPeriod q("me", [](int64_t lo, int64_t hi) {
      CHECK(lo == 0);
      CHECK(hi == 126);
      return hi - 1;
    });
    CHECK(q.backoff_delay(1, 250, 5000) == 375);
  }

  TEST_CASE("--timeout while the backend fails: 69 and its error; while busy: the conflict code "
            "and the holder") {
    for (bool failing : {true, false}) {
      CAPTURE(failing);
      Harness h;
      h.backend.acquire("m", "other", 10000, 2000);
      ContenderConfig cfg = contender_config("me");
      cfg.wait_timeout_ms = 3000;
      Contender c = make_contender(cfg);
      Actions a = c.start(h.local);
      a = h.reply(c, *find<action::Call>(a), 5); // busy: the holder is seen
      if (failing) {
        // A try before the give-up fails (a notification asks at once).
        h.advance(1000);
        a = c.on_notify(h.local);
        REQUIRE(find<action::Call>(a));
        CallResult bad;
        bad.status = CallResult::Status::failed;
        bad.error = "READONLY You can't write against a read only replica.";
        h.advance(10);
        a = c.on_reply(h.local, bad);
        REQUIRE(c.wake_at());
        CHECK(*c.wake_at() == h.local + 250); // the back-off, before the give-up
        int64_t began = 5000;                 // Harness::local at the start
        for (int i = 0; i < 10 && !find<action::Exit>(a); ++i) {
          h.advance(*c.wake_at() - h.local);
          a = c.on_timer(h.local);
          if (find<action::Call>(a)) a = c.on_reply(h.local, bad);
        }
        CHECK(h.local == began + 3000);
        REQUIRE(find<action::Exit>(a));
        CHECK(find<action::Exit>(a)->code == 69);
        REQUIRE(find<action::Notice>(a));
        CHECK(find<action::Notice>(a)->level == LogLevel::error);
        REQUIRE(find<action::Notice>(a));
        CHECK(find<action::Notice>(a)->notice.event == WaitNotice::Event::gave_up);
        CHECK(find<action::Notice>(a)->notice.error.find("READONLY") != std::string::npos);
        CHECK(!find<action::Call>(a)); // a failed reply took nothing: no release
      } else {
        h.advance(3000 - 5);
        a = c.on_timer(h.local);
        REQUIRE(find<action::Exit>(a));
        CHECK(find<action::Exit>(a)->code == 75);
        REQUIRE(find<action::Notice>(a));
        CHECK(find<action::Notice>(a)->level == LogLevel::info);
        REQUIRE(find<action::Notice>(a));
        CHECK(find<action::Notice>(a)->notice.event == WaitNotice::Event::gave_up);
        CHECK(find<action::Notice>(a)->notice.holder_id == "other");
        CHECK(*find<action::Notice>(a)->notice.held_ms == 3000);
        CHECK(find<action::Notice>(a)->notice.waited_ms == 3000);
      }
    }
  }

  TEST_CASE("--timeout with a failing acquire in flight: its reply decides, 69") {
    Harness h;
    ContenderConfig cfg = contender_config("me");
    cfg.wait_timeout_ms = 1000;
    Contender c = make_contender(cfg);
    Actions a = c.start(h.local);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->timeout_ms == 1000);
    h.advance(1000);
    CHECK(c.on_timer(h.local).empty()); // waits for the reply in flight
    CallResult lost;
    lost.status = CallResult::Status::indeterminate;
    lost.error = "connection closed";
    a = c.on_reply(h.local, lost);
    // it may have been applied: a release (of whatever our id holds), then 69
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::release);
    CHECK(find<action::Call>(a)->token == 0);
    CallResult dead;
    dead.status = CallResult::Status::failed;
    dead.error = "connection refused";
    a = c.on_reply(h.local, dead);
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 69);
    // nothing above -v about a release of a lock it never knew it held
    for (const auto& x : a)
      if (auto level = log_level(x)) CHECK(*level == LogLevel::verbose);
  }

  TEST_CASE("an owner's guard keeps the retry period whatever a waiter's back-off did") {
    Harness h;
    ContenderConfig cfg = contender_config("me");
    Contender c = make_contender(cfg, 1'000'000);
    Actions a = c.start(h.local);
    CallResult bad;
    bad.status = CallResult::Status::failed;
    bad.error = "busy";
    for (int i = 0; i < 5; ++i) {
      a = c.on_reply(h.local, bad);
      h.advance(*c.wake_at() - h.local);
      a = c.on_timer(h.local);
    }
    a = h.reply(c, *find<action::Call>(a));
    REQUIRE(find<action::StartChild>(a));
    h.advance(*c.wake_at() - h.local);
    a = c.on_timer(h.local);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::guard);
    for (int i = 0; i < 3; ++i) {
      a = c.on_reply(h.local, bad);
      CHECK(*c.wake_at() == h.local + cfg.retry_ms);
      h.advance(cfg.retry_ms);
      a = c.on_timer(h.local);
      REQUIRE(find<action::Call>(a));
    }
  }

  TEST_CASE("run repeats its waiting notice every notice_every_ms; lead says it once") {
    for (auto mode : {ContenderConfig::Mode::run, ContenderConfig::Mode::lead}) {
      Harness h;
      h.backend.acquire("m", "other", 10000, 2000);
      ContenderConfig cfg = contender_config("me");
      cfg.mode = mode;
      cfg.notice_every_ms = 30000;
      Contender c = make_contender(cfg);
      Actions a = c.start(h.local);
      std::vector<WaitNotice::Event> events;
      std::vector<int64_t> reminded; // waited_ms of each still_waiting notice
      int64_t began = h.local;
      for (int i = 0; i < 12; ++i) {
        a = h.reply(c, *find<action::Call>(a));
        for (const auto& x : a) {
          const auto* n = std::get_if<action::Notice>(&x);
          if (!n) continue;
          events.push_back(n->notice.event);
          if (n->notice.event == WaitNotice::Event::still_waiting) {
            CHECK(n->notice.waited_ms == h.local - began);
            CHECK(n->notice.holder_id == "other");
            reminded.push_back(n->notice.waited_ms);
          }
        }
        int64_t wait = *c.wake_at() - h.local;
        h.advance(wait / 2);
        h.backend.acquire("m", "other", 10000, 2000); // the holder renews
        h.advance(wait - wait / 2);
        a = c.on_timer(h.local);
      }
      // 12 replies 6 to 12 s apart: more than 66 s of waiting
      REQUIRE(!events.empty());
      CHECK(events.front() == WaitNotice::Event::waiting);
      CHECK(h.local - began > 66000);
      if (mode == ContenderConfig::Mode::run) {
        REQUIRE(reminded.size() >= 2);
        CHECK(reminded[0] >= 30000);
        CHECK(reminded[0] < 30000 + 12000);
        for (size_t i = 1; i < reminded.size(); ++i) {
          CHECK(reminded[i] - reminded[i - 1] >= 30000);
          CHECK(reminded[i] - reminded[i - 1] < 30000 + 12000);
        }
      } else {
        CHECK(reminded.empty());
      }
    }
  }
}
