// The driver (cli/driver.cpp, the poll loop) against a fake of the real
// Backend interface, with real child processes, a real watchdog and real
// signals: a plain run, a hand-over, a grant nobody takes, and a signal that
// arrives during a backend call; and simba acquire's run of the loop.
#include "cli/driver.hpp"
#include "fake_driver_backend.hpp"
#include "process_support.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <csignal>
#include <string>

using namespace simba;
using simba::test::DriverFakeBackend;

namespace {

const std::string k_mutex = "m";
const std::string k_me = "me";

core::ContenderConfig run_config() {
  core::ContenderConfig c;
  c.mutex = k_mutex;
  c.contender_id = k_me;
  c.label = k_me;
  c.ttl_ms = 10000;
  c.transition_ms = 2000;
  c.kill_after_ms = 1000;
  return c;
}

cli::Command shell(const std::string& script) { return {"/bin/sh", {"sh", "-c", script}, {}}; }

// Runs `command` under `config` with `b`, as `simba run` does.
cli::Outcome drive(DriverFakeBackend& b, const cli::Command& command,
                   const core::ContenderConfig& config = run_config()) {
  process::Watchdog watchdog;
  watchdog.start();
  cli::Log log{true, false, false, false}; // quiet
  core::Contender contender(
      config, core::ContendPeriod(config.contender_id, [](int64_t lo, int64_t) { return lo; }));
  cli::Outcome o = cli::drive(contender, config, b, command, log, watchdog);
  // The driver leaves the watchdog to simba's exit; a test process goes on:
  // end it and reap it, so that the next tests find no child of ours.
  pid_t pid = watchdog.pid();
  watchdog.stop();
  if (pid > 0) waitpid(pid, nullptr, 0);
  return o;
}

// Another contender holds the mutex for a minute.
void held_by_other(DriverFakeBackend& b) {
  b.store.now = sys::boottime_ms();
  b.store.acquire(k_mutex, "other", 60000, 2000);
}

} // namespace

TEST_SUITE("cli::driver") {
  TEST_CASE("uncontended: one acquire, CMD, one release; CMD's exit code is simba's") {
    DriverFakeBackend b;
    cli::Outcome o = drive(b, shell("test \"$SIMBA_FENCING_TOKEN\" = 1 && exit 7"));
    CHECK(o.code == 7);
    CHECK(o.signal == 0);
    CHECK(b.acquires == 1);
    CHECK(b.guards == 0);
    REQUIRE(b.releases == 1);
    CHECK(b.released_tokens[0] == 1);
    CHECK(b.store.lease(k_mutex).owner_id.empty());
    // A CMD that ends at once: no wake-ups asked for (the owner's begin at
    // 200 ms of CMD), no settling (at 5 ms of CMD). CMD ran between the
    // acquire's return and the release: when a loaded machine made that
    // longer, the settle (or the listening) may have come, but never before.
    int64_t cmd_at_most = b.released_at_ms - b.acquired_at_ms;
    CAPTURE(cmd_at_most);
    CHECK(b.waits == 0);
    if (cmd_at_most < 5) CHECK(b.settles == 0);
    if (cmd_at_most < 200) CHECK(b.owns == 0);
  }

  TEST_CASE("an owner whose CMD runs settles once, at 5 ms, and listens from 200 ms on") {
    DriverFakeBackend b;
    int64_t t0 = sys::boottime_ms();
    b.during_call = [&](core::Op op) {
      if (op == core::Op::release) CHECK(b.settles == 1); // before CMD ended
    };
    cli::Outcome o = drive(b, cli::Command{"/bin/sleep", {"sleep", "0.4"}, {}});
    CHECK(o.code == 0);
    CHECK(b.settles == 1);
    CHECK(b.waits == 0);
    CHECK(b.owns >= 1);
    CHECK(sys::boottime_ms() - t0 >= 400);
  }

  TEST_CASE(
      "hand-over: a waiter handed the mutex by the release starts CMD with no acquire of its own") {
    DriverFakeBackend b;
    held_by_other(b);
    b.look = false; // the backend saw the mutex held once we were queued
    uint64_t granted = 0;
    b.on_wait = [&] {
      if (b.waits == 1) b.wake_in(30);
    }; // the holder releases while we sleep in poll
    b.on_wake = [&] {
      b.hand_over(k_mutex, "other", k_me, 10000, 2000);
      granted = b.grant->reply.observed.lease.fencing_token;
    };
    int64_t t0 = sys::boottime_ms();
    cli::Outcome o = drive(b, shell("test \"$SIMBA_FENCING_TOKEN\" = 2 && exit 3"));
    CHECK(o.code == 3); // CMD ran, under the granted lease
    CHECK(b.wakes == 1);
    CHECK(b.acquires == 1); // the first try only, which found the mutex held
    REQUIRE(b.releases == 1);
    CHECK(granted == 2);
    CHECK(b.released_tokens[0] == granted);
    CHECK(b.store.lease(k_mutex).owner_id.empty());
    CHECK(sys::boottime_ms() - t0 < 5000); // not by a timed retry (the lease had a minute)
    CHECK(b.waits >= 1);
    CHECK(b.owns >= 1); // as the owner, once handed the mutex
  }

  TEST_CASE("a grant that comes when the contender no longer waits goes back at once") {
    DriverFakeBackend b;
    backend::Grant stray;
    stray.reply.status = backend::Reply::Status::ok;
    stray.reply.changed = true;
    b.during_call = [&](core::Op op) {
      if (op != core::Op::acquire) return;
      // CMD ends at 0.5 s; what it left ignores the kill signal and dies
      // of SIGKILL --kill-after (1 s) later. Meanwhile (draining; the
      // owner listens from 0.2 s on) a release hands the mutex to our
      // queue place again: a lease with token 99.
      b.wake_in(1000);
      int64_t now = sys::boottime_ms();
      stray.reply.observed.now = now;
      stray.reply.observed.lease = core::Lease{k_me, now, now + 10000, now + 12000, 99};
      stray.sent_at_ms = now;
      b.grant = stray;
    };
    int64_t t0 = sys::boottime_ms();
    cli::Outcome o = drive(b, shell("(trap '' TERM; exec /bin/sleep 5) & /bin/sleep 0.5"));
    CHECK(o.code == 0);
    CHECK(sys::boottime_ms() - t0 >= 1400); // it drained until the SIGKILL
    CHECK(b.wakes == 1);
    CHECK(b.acquires == 1);
    // The stray grant given back (its token), then our own lease (token 1).
    REQUIRE(b.releases == 2);
    CHECK(b.released_tokens[0] == 99);
    CHECK(b.released_tokens[1] == 1);
  }

  // CMD, were it started, would run to its end whatever simba sends it:
  // it inherits SIGTERM blocked (the mask simba found), and it leaves a
  // file. So the file says whether CMD was started at all.
  struct TermBlocked {
    sigset_t old{};
    TermBlocked() {
      sigset_t s;
      sigemptyset(&s);
      sigaddset(&s, SIGTERM);
      sigprocmask(SIG_BLOCK, &s, &old);
    }
    ~TermBlocked() { sigprocmask(SIG_SETMASK, &old, nullptr); }
  };

  TEST_CASE("SIGTERM during the acquire that took the mutex: CMD never starts, the lease goes "
            "back, 143") {
    std::string marker = "/tmp/simba-unit-cmd-ran-" + std::to_string(getpid());
    ::unlink(marker.c_str());
    DriverFakeBackend b;
    b.during_call = [&](core::Op op) {
      if (op == core::Op::acquire) ::kill(getpid(), SIGTERM); // blocked: read from the signalfd
    };
    cli::Outcome o;
    {
      TermBlocked blocked;
      o = drive(b, cli::Command{"/usr/bin/touch", {"touch", marker}, {}});
    }
    bool ran = ::access(marker.c_str(), F_OK) == 0;
    ::unlink(marker.c_str());
    CHECK_FALSE(ran); // the stop came before the reply: it wins
    CHECK(o.code == 128 + SIGTERM);
    CHECK(o.signal == SIGTERM); // simba ends by the signal it got (Contender::finish)
    CHECK(b.acquires == 1);
    CHECK(b.guards == 0);
    REQUIRE(b.releases == 1);
    CHECK(b.released_tokens[0] == 0); // contending: whatever our acquire took
    CHECK(b.store.lease(k_mutex).owner_id.empty());
  }

  TEST_CASE("SIGTERM during a step's first guard: CMD never starts, the lease is kept, 143") {
    std::string marker = "/tmp/simba-unit-step-ran-" + std::to_string(getpid());
    ::unlink(marker.c_str());
    DriverFakeBackend b;
    b.store.now = sys::boottime_ms();
    b.store.acquire(k_mutex, k_me, 60000, 2000); // the job's lease (simba acquire's),
    uint64_t token = b.store.lease(k_mutex).fencing_token;
    b.store.hold(k_mutex, k_me, token, 60000); // kept only held
    core::ContenderConfig config = run_config();
    config.mode = core::ContenderConfig::Mode::step;
    config.lease_token = token;
    b.during_call = [&](core::Op op) {
      if (op == core::Op::guard) ::kill(getpid(), SIGTERM);
    };
    cli::Outcome o;
    {
      TermBlocked blocked;
      o = drive(b, cli::Command{"/usr/bin/touch", {"touch", marker}, {}}, config);
    }
    bool ran = ::access(marker.c_str(), F_OK) == 0;
    ::unlink(marker.c_str());
    CHECK_FALSE(ran);
    CHECK(o.code == 128 + SIGTERM);
    CHECK(b.guards == 1);
    CHECK(b.holds == 1); // kept, marked as only held, as after a step
    CHECK(b.releases == 0);
    CHECK(b.store.lease(k_mutex).owner_id == k_me);
    CHECK(b.store.lease(k_mutex).holding);
  }

  TEST_CASE("SIGTERM during a waiter's acquire: simba exits at once, CMD never starts") {
    DriverFakeBackend b;
    held_by_other(b);
    b.look = false; // no second acquire right after queueing
    bool raised = false;
    b.during_call = [&](core::Op op) {
      if (op == core::Op::acquire && !raised) ::kill(getpid(), SIGTERM);
      raised = true;
    };
    core::ContenderConfig config = run_config();
    config.wait_timeout_ms = 3000; // were the signal ignored: 75 after 3 s
    int64_t t0 = sys::boottime_ms();
    cli::Outcome o = drive(b, shell("exit 0"), config);
    CHECK(sys::boottime_ms() - t0 < 1000);
    CHECK(o.code == 128 + SIGTERM);
    CHECK(o.signal == SIGTERM);
    CHECK(b.acquires == 1);
    CHECK(b.releases == 0); // nothing of ours to release
    CHECK(b.store.lease(k_mutex).owner_id == "other");
  }

  TEST_CASE("acquire: two calls (acquire, hold), no watchdog, no CMD, no wake-up channel, no "
            "release; the lease handed out") {
    DriverFakeBackend b;
    core::ContenderConfig config = run_config();
    config.mode = core::ContenderConfig::Mode::acquire;
    process::Watchdog watchdog; // not started: acquire starts none
    cli::Log log{true, false, false, false};
    core::Contender contender(
        config, core::ContendPeriod(config.contender_id, [](int64_t lo, int64_t) { return lo; }));
    cli::Outcome o = cli::drive(contender, config, b, cli::Command{}, log, watchdog);
    CHECK(o.code == 0);
    CHECK(watchdog.pid() <= 0);
    CHECK(b.acquires == 1);
    CHECK(b.holds == 1);
    CHECK(b.releases == 0);
    CHECK(b.owns == 0);
    REQUIRE(o.leased);
    CHECK(o.leased->lease.fencing_token == b.store.lease(k_mutex).fencing_token);
    CHECK(b.store.lease(k_mutex).owner_id == k_me);
    CHECK(b.store.lease(k_mutex).holding);
  }
}
