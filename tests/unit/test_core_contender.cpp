#include "core/contender.hpp"
#include "fake_backend.hpp"

#include <doctest/doctest.h>

#include <csignal>

using namespace simba;
using namespace simba::core;
using K = Action::Kind;

namespace {

ContenderConfig config(const std::string& id) {
  ContenderConfig c;
  c.mutex = "m";
  c.contender_id = id;
  c.ttl_ms = 10000;
  c.transition_ms = 2000;
  c.kill_after_ms = 1000;
  return c;
}

Contender make(ContenderConfig c, int64_t jitter = 0) {
  std::string id = c.contender_id;
  return Contender(std::move(c), ContendPeriod(id, [jitter](int64_t, int64_t) { return jitter; }));
}

const Action* find(const Actions& acts, K kind) {
  for (const auto& a : acts)
    if (a.kind == kind) return &a;
  return nullptr;
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
  Actions reply(Contender& c, const Action& call, int64_t latency = 0) {
    REQUIRE(call.kind == K::call);
    advance(latency);
    return c.on_reply(local, backend.apply("m", "me", call));
  }
};

} // namespace

TEST_SUITE("core::Contender") {
  TEST_CASE("acquire, start CMD with a deadline from the send time, release, exit with CMD's status") {
    Harness h;
    Contender c = make(config("me"));
    Actions a = c.start(h.local);
    REQUIRE(find(a, K::call));
    CHECK(find(a, K::call)->op == Op::acquire);
    int64_t sent = h.local;
    a = h.reply(c, *find(a, K::call), 30);
    const Action* start = find(a, K::start_child);
    REQUIRE(start);
    // deadline = send_time + (transition_at - backend_now) - margin
    CHECK(start->deadline == sent + 12000 - safety_margin(10000, 2000));
    CHECK(safety_margin(10000, 2000) == 122);
    CHECK(start->lease.fencing_token == 1);
    CHECK(c.phase() == Contender::Phase::owning);
    // the guard is due at ttl_at (measured from the send time)
    CHECK(*c.wake_at() == sent + 10000);

    a = c.on_child_exit(h.local, 3, false);
    const Action* rel = find(a, K::call);
    REQUIRE(rel);
    CHECK(rel->op == Op::release);
    a = h.reply(c, *rel);
    REQUIRE(find(a, K::exit));
    CHECK(find(a, K::exit)->code == 3);
    CHECK(!h.backend.lease("m").valid_at(h.backend.now));
  }

  TEST_CASE("busy: wait until transition_at + jitter; --no-wait exits with the conflict code") {
    Harness h;
    h.backend.acquire("m", "other", 10000, 2000);
    h.advance(1000);
    Contender c = make(config("me"), 500);
    Actions a = c.start(h.local);
    a = h.reply(c, *find(a, K::call));
    CHECK(!find(a, K::call));
    CHECK(!find(a, K::start_child));
    // once, a notice of what it waits for
    REQUIRE(find(a, K::log));
    CHECK(find(a, K::log)->level == 3);
    CHECK(find(a, K::log)->message.find("held by other") != std::string::npos);
    CHECK(*c.wake_at() == h.local + 11000 + 500);

    ContenderConfig nw = config("me");
    nw.no_wait = true;
    nw.conflict_exit_code = 9;
    Contender d = make(nw);
    a = d.start(h.local);
    a = h.reply(d, *find(a, K::call));
    REQUIRE(find(a, K::exit));
    CHECK(find(a, K::exit)->code == 9);
  }

  TEST_CASE("--timeout gives up with the conflict code and holds nothing") {
    Harness h;
    h.backend.acquire("m", "other", 10000, 2000);
    ContenderConfig cfg = config("me");
    cfg.wait_timeout_ms = 3000;
    Contender c = make(cfg);
    Actions a = c.start(h.local);
    a = h.reply(c, *find(a, K::call));
    CHECK(*c.wake_at() == h.local + 3000);
    h.advance(3000);
    a = c.on_timer(h.local);
    REQUIRE(find(a, K::exit));
    CHECK(find(a, K::exit)->code == 75);
    CHECK(!find(a, K::call));
  }

  TEST_CASE("a release notification makes a waiter try at once") {
    Harness h;
    h.backend.acquire("m", "other", 10000, 2000);
    Contender c = make(config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find(a, K::call));
    h.advance(50);
    h.backend.release("m", "other");
    a = c.on_notify(h.local);
    REQUIRE(find(a, K::call));
    a = h.reply(c, *find(a, K::call));
    CHECK(find(a, K::start_child));
  }

  TEST_CASE("a hand-over starts CMD without a call, the deadline counted from the grant's send time") {
    Harness h;
    h.backend.acquire("m", "other", 10000, 2000);
    Contender c = make(config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find(a, K::call));
    int64_t subscribed = h.local; // what the backend reports as the send time
    h.advance(3000);
    // The release makes us the owner; the message reaches us 40 ms later.
    h.backend.release("m", "other");
    core::CallResult g = h.backend.acquire("m", "me", 10000, 2000);
    h.advance(40);
    a = c.on_grant(h.local, g, subscribed);
    CHECK(!find(a, K::call));
    const Action* start = find(a, K::start_child);
    REQUIRE(start);
    // From the send time, not the arrival: 3040 ms of the lease are gone.
    CHECK(start->deadline == subscribed + 12000 - safety_margin(10000, 2000));
    CHECK(c.phase() == Contender::Phase::owning);
    CHECK(*c.wake_at() <= subscribed + 10000); // the guard, also from then
    // Once owner, a second one changes nothing.
    CHECK(c.on_grant(h.local, g, subscribed).empty());
  }

  TEST_CASE("a hand-over that leaves less than half a ttl before the kill point renews before CMD starts") {
    for (int64_t waited : {6000, 7000}) {
      CAPTURE(waited);
      Harness h;
      h.backend.acquire("m", "other", 10000, 2000);
      Contender c = make(config("me"));
      Actions a = c.start(h.local);
      a = h.reply(c, *find(a, K::call));
      int64_t subscribed = h.local;
      h.advance(waited);
      h.backend.release("m", "other");
      core::CallResult g = h.backend.acquire("m", "me", 10000, 2000);
      a = c.on_grant(h.local, g, subscribed);
      // 12000 - 122 - 1000 - waited left before the kill point: 4878 at 6 s
      // (less than 5000: renew first), 3878 at 7 s.
      CHECK(!find(a, K::start_child));
      REQUIRE(find(a, K::call));
      CHECK(find(a, K::call)->op == Op::acquire);
      a = h.reply(c, *find(a, K::call), 10);
      REQUIRE(find(a, K::start_child));
      CHECK(find(a, K::start_child)->deadline == h.local - 10 + 12000 - safety_margin(10000, 2000));
    }
  }

  TEST_CASE("a hand-over counted from long ago renews before CMD starts; one during a call waits for its reply") {
    Harness h;
    h.backend.acquire("m", "other", 10000, 2000);
    Contender c = make(config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find(a, K::call));
    int64_t subscribed = h.local;
    h.advance(11500); // past the kill point the grant's lease would have
    h.backend.release("m", "other");
    core::CallResult g = h.backend.acquire("m", "me", 10000, 2000);
    a = c.on_grant(h.local, g, subscribed);
    CHECK(!find(a, K::start_child));
    REQUIRE(find(a, K::call));
    CHECK(find(a, K::call)->op == Op::acquire); // a renewal
    a = h.reply(c, *find(a, K::call), 10);
    REQUIRE(find(a, K::start_child));
    CHECK(find(a, K::start_child)->deadline == h.local - 10 + 12000 - safety_margin(10000, 2000));

    // A waiter whose own try is in flight ignores the grant: the reply tells.
    Harness h2;
    h2.backend.acquire("m", "other", 10000, 2000);
    Contender d = make(config("me"));
    a = d.start(h2.local);
    a = h2.reply(d, *find(a, K::call));
    a = d.on_notify(h2.local); // tries again
    REQUIRE(find(a, K::call));
    h2.backend.release("m", "other");
    core::CallResult g2 = h2.backend.acquire("m", "me", 10000, 2000);
    CHECK(d.on_grant(h2.local, g2, h2.local).empty());
    CHECK(d.phase() == Contender::Phase::contending);
    a = h2.reply(d, *find(a, K::call));
    CHECK(find(a, K::start_child));
  }

  TEST_CASE("guard at ttl_at renews and moves the watchdog deadline") {
    Harness h;
    Contender c = make(config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find(a, K::call));
    int64_t first_deadline = find(a, K::start_child)->deadline;
    h.advance(*c.wake_at() - h.local);
    a = c.on_timer(h.local);
    REQUIRE(find(a, K::call));
    CHECK(find(a, K::call)->op == Op::guard);
    a = h.reply(c, *find(a, K::call), 5);
    REQUIRE(find(a, K::set_deadline));
    CHECK(find(a, K::set_deadline)->deadline > first_deadline);
    CHECK(h.backend.lease("m").fencing_token == 1);
  }

  TEST_CASE("failed guards retry every 250 ms; kill signal at deadline - kill_after, SIGKILL at the deadline") {
    Harness h;
    Contender c = make(config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find(a, K::call));
    int64_t deadline = find(a, K::start_child)->deadline;
    h.advance(*c.wake_at() - h.local);
    int guards = 0;
    bool stopped = false;
    for (int turn = 0; !stopped; ++turn) {
      REQUIRE_MESSAGE(turn < 100, "no kill signal after 100 timer turns"); // bounded, not a hang
      a = c.on_timer(h.local);
      if (const Action* call = find(a, K::call)) {
        ++guards;
        CHECK(call->op == Op::guard);
        CHECK(h.local + call->timeout_ms <= deadline - 1000); // never past the kill point
        CallResult fail;
        fail.status = CallResult::Status::failed;
        fail.error = "busy";
        a = c.on_reply(h.local, fail);
        CHECK(*c.wake_at() - h.local <= 250);
      }
      if (const Action* sig = find(a, K::signal_all)) {
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
    REQUIRE(find(a, K::signal_all));
    CHECK(find(a, K::signal_all)->signo == SIGKILL);
    a = c.on_child_exit(h.local, 137, false);
    REQUIRE(find(a, K::call));
    CHECK(find(a, K::call)->op == Op::release);
    a = h.reply(c, *find(a, K::call));
    CHECK(find(a, K::exit)->code == 76);
  }

  TEST_CASE("a reply showing another owner or no lease stops CMD at once (exit 76)") {
    for (bool forced : {true, false}) {
      CAPTURE(forced);
      Harness h;
      Contender c = make(config("me"));
      Actions a = c.start(h.local);
      a = h.reply(c, *find(a, K::call));
      h.advance(100);
      if (forced) {
        h.backend.force_release("m");
      } else {
        h.backend.steal("m", "thief", 10000, 2000);
      }
      a = c.on_notify(h.local); // the forced release notifies the owner too
      REQUIRE(find(a, K::call));
      a = h.reply(c, *find(a, K::call));
      REQUIRE(find(a, K::signal_all));
      CHECK(find(a, K::signal_all)->signo == SIGTERM);
      CHECK(*c.wake_at() == h.local + 1000); // SIGKILL after kill_after
      a = c.on_child_exit(h.local + 10, 143, false);
      a = h.reply(c, *find(a, K::call));
      CHECK(find(a, K::exit)->code == 76);
      if (!forced) CHECK(h.backend.lease("m").owner_id == "thief");
    }
  }

  TEST_CASE("an indeterminate acquire never starts CMD; asking again learns the truth") {
    Harness h;
    Contender c = make(config("me"));
    Actions a = c.start(h.local);
    h.backend.apply("m", "me", *find(a, K::call)); // applied, but the answer was lost
    CallResult lost;
    lost.status = CallResult::Status::indeterminate;
    lost.error = "timeout";
    a = c.on_reply(h.local + 2000, lost);
    CHECK(!find(a, K::start_child));
    h.advance(2000 + 250); // asks again after a retry period
    a = c.on_timer(h.local);
    REQUIRE(find(a, K::call));
    a = h.reply(c, *find(a, K::call));
    REQUIRE(find(a, K::start_child));
    CHECK(find(a, K::start_child)->lease.fencing_token == 1); // renewal of the same lease
  }

  TEST_CASE("what CMD left running is stopped before the release") {
    Harness h;
    Contender c = make(config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find(a, K::call));
    a = c.on_child_exit(h.local, 0, true);
    REQUIRE(find(a, K::signal_all));
    CHECK(!find(a, K::call));
    CHECK(h.backend.lease("m").valid_at(h.backend.now));
    h.advance(1000);
    a = c.on_timer(h.local);
    REQUIRE(find(a, K::signal_all));
    CHECK(find(a, K::signal_all)->signo == SIGKILL);
    a = c.on_all_gone(h.local);
    REQUIRE(find(a, K::call));
    CHECK(find(a, K::call)->op == Op::release);
  }

  TEST_CASE("--min-hold keeps the lease until acquired_at + D and exits at once") {
    Harness h;
    ContenderConfig cfg = config("me");
    cfg.min_hold_ms = 60000;
    Contender c = make(cfg);
    Actions a = c.start(h.local);
    a = h.reply(c, *find(a, K::call));
    int64_t acquired = h.backend.lease("m").acquired_at;
    h.advance(1000);
    a = c.on_child_exit(h.local, 4, false);
    const Action* hold = find(a, K::call);
    REQUIRE(hold);
    CHECK(hold->op == Op::guard);
    a = h.reply(c, *hold);
    REQUIRE(find(a, K::exit));
    CHECK(find(a, K::exit)->code == 4);
    CHECK(h.backend.lease("m").transition_at == acquired + 60000);
    h.advance(60000 - 1000 - 1);
    CHECK(h.backend.lease("m").valid_at(h.backend.now));
    h.advance(2);
    CHECK(!h.backend.lease("m").valid_at(h.backend.now));
  }

  TEST_CASE("--min-hold already over: release as usual") {
    Harness h;
    ContenderConfig cfg = config("me");
    cfg.min_hold_ms = 500;
    Contender c = make(cfg);
    Actions a = c.start(h.local);
    a = h.reply(c, *find(a, K::call));
    h.advance(1000);
    a = c.on_child_exit(h.local, 0, false);
    REQUIRE(find(a, K::call));
    CHECK(find(a, K::call)->op == Op::release);
  }

  TEST_CASE("signals: cancel the wait (128+N, nothing held); forwarded while CMD runs") {
    Harness h;
    h.backend.acquire("m", "other", 10000, 2000);
    Contender c = make(config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find(a, K::call));
    CHECK(c.on_signal(h.local, SIGWINCH).empty());
    a = c.on_signal(h.local, SIGINT);
    REQUIRE(find(a, K::exit));
    CHECK(find(a, K::exit)->code == 128 + SIGINT);

    Harness h2;
    Contender d = make(config("me"));
    a = d.start(h2.local);
    a = h2.reply(d, *find(a, K::call));
    a = d.on_signal(h2.local, SIGUSR1);
    REQUIRE(find(a, K::signal_child));
    CHECK(find(a, K::signal_child)->signo == SIGUSR1);
    CHECK(d.phase() == Contender::Phase::owning);
  }

  TEST_CASE("a signal while an indeterminate acquire may hold the lease releases it") {
    Harness h;
    Contender c = make(config("me"));
    Actions a = c.start(h.local);
    h.backend.apply("m", "me", *find(a, K::call));
    CallResult lost;
    lost.status = CallResult::Status::indeterminate;
    a = c.on_reply(h.local, lost);
    a = c.on_signal(h.local, SIGTERM);
    REQUIRE(find(a, K::call));
    CHECK(find(a, K::call)->op == Op::release);
    a = h.reply(c, *find(a, K::call));
    CHECK(find(a, K::exit)->code == 128 + SIGTERM);
    CHECK(!h.backend.lease("m").valid_at(h.backend.now));
  }
}

TEST_SUITE("core::Contender") {
  TEST_CASE("CMD's exit noticed after the kill point counts as a lost lease (exit 76)") {
    Harness h;
    Contender c = make(config("me"));
    Actions a = c.start(h.local);
    a = h.reply(c, *find(a, K::call));
    int64_t deadline = find(a, K::start_child)->deadline;
    h.advance(deadline - h.local + 5); // simba was stopped; the watchdog killed CMD
    a = c.on_child_exit(h.local, 137, false);
    REQUIRE(find(a, K::call));
    CHECK(find(a, K::call)->op == Op::release);
    a = h.reply(c, *find(a, K::call));
    CHECK(find(a, K::exit)->code == 76);
  }
}

TEST_SUITE("core::Contender") {
  TEST_CASE("a forced release revokes: the owner stops at once, waiters get in only when the old lease would have ended") {
    Harness h;
    Contender owner = make(config("me"));
    Actions a = owner.start(h.local);
    a = h.reply(owner, *find(a, K::call));
    int64_t old_end = h.backend.lease("m").transition_at;
    h.advance(100);
    CHECK(h.backend.force_release("m").changed);
    // a waiter is refused until the revoked lease's transition_at
    CHECK_FALSE(h.backend.acquire("m", "waiter", 10000, 2000).changed);
    Contender waiter = make(config("waiter"));
    Actions w = waiter.start(h.local);
    w = waiter.on_reply(h.local, h.backend.apply("m", "waiter", *find(w, K::call)));
    CHECK(!find(w, K::start_child));
    CHECK(*waiter.wake_at() - h.local == old_end - h.backend.now); // jitter 0
    // the owner learns it at once (notification) and stops its CMD
    a = owner.on_notify(h.local);
    a = h.reply(owner, *find(a, K::call));
    REQUIRE(find(a, K::signal_all));
    CHECK(find(a, K::signal_all)->signo == SIGTERM);
    h.advance(old_end - h.backend.now);
    CHECK(h.backend.acquire("m", "waiter", 10000, 2000).changed);
  }
}

TEST_SUITE("core::Contender") {
  TEST_CASE("--no-wait does not wait on a backend that does not answer: one more try, then 69") {
    Harness h;
    ContenderConfig cfg = config("me");
    cfg.no_wait = true;
    Contender c = make(cfg);
    Actions a = c.start(h.local);
    CallResult lost;
    lost.status = CallResult::Status::indeterminate;
    lost.error = "timeout";
    a = c.on_reply(h.local, lost);
    CHECK(!find(a, K::exit));
    h.advance(250); // a retry period
    a = c.on_timer(h.local);
    REQUIRE(find(a, K::call));
    a = c.on_reply(h.local + 2000, lost);
    // the acquire may have been applied: release (best effort), then exit 69
    REQUIRE(find(a, K::call));
    CHECK(find(a, K::call)->op == Op::release);
    a = c.on_reply(h.local + 2000, lost);
    REQUIRE(find(a, K::exit));
    CHECK(find(a, K::exit)->code == 69);
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
      ContenderConfig cfg = config("me");
      Contender c = make(cfg);
      Actions a = c.start(h.local);
      REQUIRE(find(a, K::call));
      if (unknown) {
        h.backend.apply("m", "me", *find(a, K::call)); // applied; the answer is lost
        CallResult lost;
        lost.status = CallResult::Status::indeterminate;
        lost.error = "timeout";
        h.advance(cfg.call_timeout_ms);
        a = c.on_reply(h.local, lost);
      } else {
        // The reply comes after the kill point of the lease it grants.
        int64_t life = cfg.ttl_ms + cfg.transition_ms - safety_margin(cfg.ttl_ms, cfg.transition_ms) -
                       cfg.kill_after_ms;
        a = h.reply(c, *find(a, K::call), life + 1);
      }
      CHECK(!find(a, K::start_child));
      CHECK(!find(a, K::call));
      CHECK(c.phase() == Contender::Phase::contending);
      REQUIRE(c.wake_at());
      CHECK(*c.wake_at() == h.local + cfg.retry_ms);
      CHECK(c.on_timer(h.local + cfg.retry_ms - 1).empty());
      h.advance(cfg.retry_ms);
      a = c.on_timer(h.local);
      REQUIRE(find(a, K::call));
      CHECK(find(a, K::call)->op == Op::acquire);
      // In time now: a renewal of the same lease, and CMD starts.
      a = h.reply(c, *find(a, K::call), 10);
      REQUIRE(find(a, K::start_child));
      CHECK(find(a, K::start_child)->lease.fencing_token == 1);
    }
  }
}
