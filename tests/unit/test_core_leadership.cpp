// The lead and schedule modes of the contend state machine, with a fake
// clock and the fake backend.
#include "core/contender.hpp"
#include "core_support.hpp"
#include "fake_backend.hpp"

#include <doctest/doctest.h>

#include <csignal>

using namespace simba;
using namespace simba::core;
using namespace simba::test;
using Mode = ContenderConfig::Mode;

namespace {

struct LeaderWorld {
  test::FakeBackend backend;
  int64_t local = 1000;
  Contender c;
  int starts = 0;
  bool child = false;
  std::optional<int> exit_code;

  explicit LeaderWorld(ContenderConfig cfg)
      : c(cfg, ContendPeriod("me", [](int64_t, int64_t) { return 0; })) {}

  void advance_to(int64_t t) {
    backend.now += t - local;
    local = t;
  }
  // Executes actions as a driver would: calls answered at once, CMD started.
  void run(Actions acts) {
    // Bounded: a machine that keeps answering with actions is a failure
    // (the call -> reply -> call chain of a spinning contender), not a hang.
    for (int round = 0; !acts.empty(); ++round) {
      REQUIRE_MESSAGE(round < 1000, "actions still chained after 1000 rounds");
      Actions next;
      for (const Action& a : acts) {
        if (const auto* call = std::get_if<action::Call>(&a)) {
          Actions more = c.on_reply(local, backend.apply("m", "me", *call));
          next.insert(next.end(), more.begin(), more.end());
        } else if (std::holds_alternative<action::StartChild>(a)) {
          CHECK_MESSAGE(!child, "two runs at once");
          child = true;
          ++starts;
        } else if (const auto* sig = std::get_if<action::SignalAll>(&a); sig && child) {
          child = false;
          Actions more = c.on_child_exit(local, 128 + sig->signo, false);
          next.insert(next.end(), more.begin(), more.end());
        } else if (const auto* exit = std::get_if<action::Exit>(&a)) {
          exit_code = exit->code;
        }
      }
      acts = std::move(next);
    }
  }
  void start() { run(c.start(local)); }
  // Lets virtual time pass, firing timers as they come.
  void until(int64_t t) {
    int timers = 0;
    while (auto at = c.wake_at()) {
      if (*at > t || exit_code) break;
      REQUIRE_MESSAGE(++timers < 100000, "timers keep firing: a loop in virtual time");
      advance_to(std::max(*at, local));
      run(c.on_timer(local));
    }
    if (local < t) advance_to(t);
  }
  void child_exits(int code) {
    REQUIRE(child);
    child = false;
    run(c.on_child_exit(local, code, false));
  }
};

} // namespace

TEST_SUITE("core::schedule") {
  TEST_CASE("fixed-rate: a run every D from the election; a tick during a run is skipped") {
    ContenderConfig cfg = contender_config("me", Mode::schedule);
    cfg.every_ms = 1000;
    LeaderWorld w(cfg);
    w.start();
    CHECK(w.starts == 1); // no initial delay: at once
    w.until(1500);
    w.child_exits(0);
    CHECK(w.starts == 1);
    w.until(2000);
    CHECK(w.starts == 2); // tick at +1000 was skipped (busy); next at +2000
    w.until(2100);
    w.child_exits(0);
    w.until(5050);
    // +3000 ran and is still running, +4000 and +5000 skipped
    CHECK(w.starts == 3);
    w.child_exits(0);
    w.until(6000);
    CHECK(w.starts == 4);
  }

  TEST_CASE("fixed-delay: D between the end of a run and the next start") {
    ContenderConfig cfg = contender_config("me", Mode::schedule);
    cfg.every_ms = 500;
    cfg.fixed_rate = false;
    LeaderWorld w(cfg);
    w.start();
    w.until(1700);
    w.child_exits(0);
    w.until(2199);
    CHECK(w.starts == 1);
    w.until(2200);
    CHECK(w.starts == 2);
  }

  TEST_CASE("initial delay, a failing run does not stop the schedule, max runs then release") {
    ContenderConfig cfg = contender_config("me", Mode::schedule);
    cfg.every_ms = 1000;
    cfg.initial_delay_ms = 3000;
    cfg.max_runs = 2;
    LeaderWorld w(cfg);
    w.start();
    w.until(3999);
    CHECK(w.starts == 0);
    w.until(4000);
    CHECK(w.starts == 1);
    w.child_exits(2);
    CHECK(!w.exit_code);
    w.until(5000);
    CHECK(w.starts == 2);
    w.child_exits(5);
    REQUIRE(w.exit_code);
    CHECK(*w.exit_code == 5);
    CHECK(!w.backend.lease("m").valid_at(w.backend.now));
  }

  TEST_CASE("the schedule keeps guarding between runs and stops ticking on loss") {
    ContenderConfig cfg = contender_config("me", Mode::schedule);
    cfg.every_ms = 60000;
    LeaderWorld w(cfg);
    w.start();
    w.child_exits(0);
    w.until(30000); // several guards between runs
    CHECK(w.backend.lease("m").owned_by("me", w.backend.now));
    w.backend.steal("m", "other", 100000, 2000);
    w.until(45000); // the next guard sees the loss: contend again, no run
    CHECK(w.c.phase() == Contender::Phase::contending);
    w.until(61000);
    CHECK(w.starts == 1);
  }
}

TEST_SUITE("core::lead") {
  TEST_CASE("restart never: CMD's exit releases and exits with its status") {
    LeaderWorld w(contender_config("me", Mode::lead));
    w.start();
    w.child_exits(3);
    REQUIRE(w.exit_code);
    CHECK(*w.exit_code == 3);
    CHECK(!w.backend.lease("m").valid_at(w.backend.now));
  }

  TEST_CASE("restart on-failure: restarts after the delay on failure, exits on success") {
    ContenderConfig cfg = contender_config("me", Mode::lead);
    cfg.restart = ContenderConfig::Restart::on_failure;
    cfg.restart_delay_ms = 500;
    LeaderWorld w(cfg);
    w.start();
    w.child_exits(1);
    w.until(1499);
    CHECK(w.starts == 1);
    w.until(1500);
    CHECK(w.starts == 2);
    w.child_exits(0);
    REQUIRE(w.exit_code);
    CHECK(*w.exit_code == 0);
  }

  TEST_CASE("loss stops CMD and contends again; CMD starts anew when re-elected") {
    ContenderConfig cfg = contender_config("me", Mode::lead);
    LeaderWorld w(cfg);
    w.start();
    uint64_t first = w.backend.lease("m").fencing_token;
    w.backend.steal("m", "other", 1000, 500);
    w.run(w.c.on_notify(w.local)); // guard at once, see the loss
    CHECK(!w.child);               // stopped
    CHECK(!w.exit_code);           // never exits on loss
    CHECK(w.c.phase() == Contender::Phase::contending);
    w.until(w.local + 3000); // other's lease ran out: re-elected
    CHECK(w.starts == 2);
    CHECK(w.backend.lease("m").owned_by("me", w.backend.now));
    CHECK(w.backend.lease("m").fencing_token > first);
  }

  TEST_CASE("TERM stops CMD, releases and exits with CMD's status; between runs 128+N") {
    LeaderWorld w(contender_config("me", Mode::lead));
    w.start();
    Actions a = w.c.on_signal(w.local, SIGTERM);
    REQUIRE(find<action::SignalChild>(a));
    w.run(a);
    w.child_exits(143);
    REQUIRE(w.exit_code);
    CHECK(*w.exit_code == 143);
    CHECK(!w.backend.lease("m").valid_at(w.backend.now));

    ContenderConfig cfg = contender_config("me", Mode::lead);
    cfg.restart = ContenderConfig::Restart::always;
    cfg.restart_delay_ms = 5000;
    LeaderWorld idle(cfg);
    idle.start();
    idle.child_exits(0);
    idle.run(idle.c.on_signal(idle.local, SIGINT));
    REQUIRE(idle.exit_code);
    CHECK(*idle.exit_code == 128 + SIGINT);
    CHECK(idle.starts == 1);
  }

  TEST_CASE("TERM after CMD exited, while what it left is stopped: 128+N unless the run was the last") {
    ContenderConfig cfg = contender_config("me", Mode::lead);
    cfg.restart = ContenderConfig::Restart::always;
    LeaderWorld w(cfg);
    w.start();
    w.child = false;
    w.run(w.c.on_child_exit(w.local, 0, true)); // exited 0, leftovers: draining
    REQUIRE(w.c.phase() == Contender::Phase::draining);
    w.run(w.c.on_signal(w.local, SIGTERM));
    w.run(w.c.on_all_gone(w.local));
    REQUIRE(w.exit_code);
    CHECK(*w.exit_code == 128 + SIGTERM); // it would have run again: stopped between runs
    CHECK(w.starts == 1);

    // restart never: that exit was the last run, its status stays.
    LeaderWorld last(contender_config("me", Mode::lead));
    last.start();
    last.child = false;
    last.run(last.c.on_child_exit(last.local, 0, true));
    last.run(last.c.on_signal(last.local, SIGTERM));
    last.run(last.c.on_all_gone(last.local));
    REQUIRE(last.exit_code);
    CHECK(*last.exit_code == 0);

    // TERM forwarded to a running CMD that answers it with 0: CMD's status.
    LeaderWorld fwd(cfg);
    fwd.start();
    fwd.run(fwd.c.on_signal(fwd.local, SIGTERM));
    fwd.child_exits(0);
    REQUIRE(fwd.exit_code);
    CHECK(*fwd.exit_code == 0);
    CHECK(fwd.starts == 1);
  }

  TEST_CASE("USR1 is forwarded and does not stop the leader") {
    LeaderWorld w(contender_config("me", Mode::lead));
    w.start();
    Actions a = w.c.on_signal(w.local, SIGUSR1);
    REQUIRE(find<action::SignalChild>(a));
    w.child_exits(0); // restart never: CMD's own exit still ends it
    CHECK(*w.exit_code == 0);
  }
}

// Leadership moves away from a failing host: after a failed run with others
// waiting, the leader releases (CMD and all it left are gone by then) and
// contends again at the back of the queue; with nobody waiting it restarts
// under the same lease. contender_hand_over.cpp.
TEST_SUITE("core::lead hand-over") {
  ContenderConfig failing_lead(ContenderConfig::Restart r) {
    ContenderConfig cfg = contender_config("me", Mode::lead);
    cfg.restart = r;
    cfg.restart_delay_ms = 500;
    return cfg; // call_timeout_ms 2000: the pause after a hand-over
  }

  TEST_CASE("on-failure, others waiting: the failed run hands over; the waiter leads") {
    LeaderWorld w(failing_lead(ContenderConfig::Restart::on_failure));
    w.backend.waiters = 1;
    w.start();
    uint64_t ours = w.backend.lease("m").fencing_token;
    w.child_exits(1);
    CHECK(w.c.phase() == Contender::Phase::contending);
    CHECK(!w.exit_code);
    CHECK(w.backend.lease("m").free_at(w.backend.now)); // released at once
    // The waiter the release woke takes it; our wake-up in the pause does
    // not race it.
    CHECK(w.c.on_notify(w.local).empty());
    w.advance_to(w.local + 10);
    w.backend.acquire("m", "other", 10000, 2000);
    w.until(w.local + 5000);
    CHECK(w.starts == 1); // standing by: no run while the other leads
    CHECK(w.c.phase() == Contender::Phase::contending);
    CHECK(w.backend.lease("m").owned_by("other", w.backend.now));
    CHECK(w.backend.lease("m").fencing_token > ours);
  }

  TEST_CASE("nobody waiting, or not known: the restart is in place, under the same lease") {
    for (std::optional<int> waiting : {std::optional<int>(0), std::optional<int>()}) {
      LeaderWorld w(failing_lead(ContenderConfig::Restart::on_failure));
      w.backend.waiters = waiting;
      w.start();
      uint64_t ours = w.backend.lease("m").fencing_token;
      w.child_exits(1);
      CHECK(w.c.phase() == Contender::Phase::owning);
      w.until(w.local + 499);
      CHECK(w.starts == 1);
      w.until(w.local + 1);
      CHECK(w.starts == 2);
      CHECK(w.backend.lease("m").fencing_token == ours);
    }
  }

  TEST_CASE("always: a success restarts in place even with others waiting; a failure hands over") {
    LeaderWorld w(failing_lead(ContenderConfig::Restart::always));
    w.backend.waiters = 2;
    w.start();
    uint64_t ours = w.backend.lease("m").fencing_token;
    w.child_exits(0);
    w.until(w.local + 500);
    CHECK(w.starts == 2);
    CHECK(w.backend.lease("m").fencing_token == ours);
    w.child_exits(7);
    CHECK(w.c.phase() == Contender::Phase::contending);
    CHECK(w.backend.lease("m").free_at(w.backend.now));
  }

  TEST_CASE("handed over and nobody took it: leads again after the pause, with a new lease") {
    LeaderWorld w(failing_lead(ContenderConfig::Restart::on_failure));
    w.backend.waiters = 1; // a waiter that does not come
    w.start();
    uint64_t ours = w.backend.lease("m").fencing_token;
    int64_t failed_at = w.local;
    w.child_exits(1);
    w.until(failed_at + 1999); // max(--restart-delay, one call's time)
    CHECK(w.starts == 1);
    w.until(failed_at + 2000);
    CHECK(w.starts == 2);
    CHECK(w.backend.lease("m").owned_by("me", w.backend.now));
    CHECK(w.backend.lease("m").fencing_token > ours);
  }

  TEST_CASE("--max-restarts N: the failed run after N failed in a row releases and exits") {
    ContenderConfig cfg = failing_lead(ContenderConfig::Restart::always);
    cfg.max_restarts = 1;
    LeaderWorld w(cfg);
    w.start();
    w.child_exits(3); // 1st failure: restart
    w.until(w.local + 500);
    w.child_exits(0); // a success starts the count again
    w.until(w.local + 500);
    w.child_exits(3);
    w.until(w.local + 500);
    CHECK(w.starts == 4);
    CHECK(!w.exit_code);
    w.child_exits(5); // 2nd failure in a row
    REQUIRE(w.exit_code);
    CHECK(*w.exit_code == 5);
    CHECK(w.backend.lease("m").free_at(w.backend.now));

    // Counted across hand-overs: they do not start it again.
    cfg.max_restarts = 1;
    LeaderWorld h(cfg);
    h.backend.waiters = 1;
    h.start();
    h.child_exits(3); // handed over; nobody takes it; leads again
    h.until(h.local + 2000);
    REQUIRE(h.starts == 2);
    h.child_exits(4);
    REQUIRE(h.exit_code);
    CHECK(*h.exit_code == 4);

    // 0: no restart after a failure at all.
    cfg.max_restarts = 0;
    LeaderWorld z(cfg);
    z.start();
    z.child_exits(2);
    REQUIRE(z.exit_code);
    CHECK(*z.exit_code == 2);
  }

  TEST_CASE("a stop during the hand-over's release ends simba by it (between runs)") {
    Contender c = make_contender(failing_lead(ContenderConfig::Restart::on_failure));
    test::FakeBackend b;
    b.waiters = 1;
    Actions a = c.start(1000);
    a = c.on_reply(1000, b.apply("m", "me", *find<action::Call>(a)));
    REQUIRE(find<action::StartChild>(a));
    a = c.on_child_exit(1100, 1, false);
    const auto* look = find<action::Call>(a);
    REQUIRE(look);
    CHECK(look->op == Op::waiters);
    a = c.on_reply(1101, b.apply("m", "me", *look));
    const auto* release = find<action::Call>(a);
    REQUIRE(release);
    CHECK(release->op == Op::release);
    CHECK(release->exit_code == 1); // the history's released event gets CMD's status
    CHECK(c.on_signal(1102, SIGTERM).empty());
    a = c.on_reply(1103, b.apply("m", "me", *release));
    const auto* exit = find<action::Exit>(a);
    REQUIRE(exit);
    CHECK(exit->code == 128 + SIGTERM);
    CHECK(exit->signo == SIGTERM);
  }
}
