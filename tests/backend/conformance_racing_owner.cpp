// Conformance: an operation racing the owner's own writers in another
// process (its guard, the steps of its lease). A backend that reads, then
// writes with a compare (etcd: on the key's revision) must look again
// when its compare loses to such a write, never report what it did not
// do. Found on etcd: release --force exited 0 having revoked nothing while
// the owner's CMD ran on, and revoked an etcd lease a step had just left.
#include "support.hpp"

#include "core/slots.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <cstdio>
#include <functional>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

using simba::backend::Backend;
using simba::backend::Reply;
using simba::core::slot_row;
using namespace simba::test;

namespace {

// `step` on a backend of its own in a forked process, over and over as
// fast as it goes, until it returns false or the racer is stopped.
class Racer {
public:
  explicit Racer(const std::function<bool(Backend&)>& step) {
    std::fflush(nullptr);
    m_pid = fork();
    REQUIRE(m_pid >= 0);
    if (m_pid == 0) {
      try {
        auto own = open_test_backend();
        while (step(*own)) {
        }
      } catch (...) {
      }
      _exit(0);
    }
  }
  Racer(const Racer&) = delete;
  Racer& operator=(const Racer&) = delete;
  ~Racer() { stop(); }

  bool running() {
    if (m_pid <= 0) return false;
    if (waitpid(m_pid, nullptr, WNOHANG) == 0) return true;
    m_pid = -1;
    return false;
  }
  void stop() {
    if (m_pid <= 0) return;
    kill(m_pid, SIGKILL);
    waitpid(m_pid, nullptr, 0);
    m_pid = -1;
  }

private:
  pid_t m_pid = -1;
};

uint64_t acquired(Backend& b, const std::string& m) {
  REQUIRE(require_ok(b.acquire(m, "A", 10000, 10000, k_timeout)).changed);
  return require_ok(b.get(m, k_timeout)).observed.lease.fencing_token;
}

} // namespace

TEST_CASE("release --force while the owner guards: the lease is revoked") {
  auto b = open_test_backend();
  for (int round = 0; round < 8; ++round) {
    auto m = unique_mutex("force-guarded");
    uint64_t t = acquired(*b, m);
    Racer guard([&](Backend& own) {
      own.guard(m, "A", t, 10000, 10000, k_timeout);
      return true;
    });
    usleep(20000 + 5000 * round); // a few of its rewrites first
    Reply forced = b->force_release(m, 0, k_timeout);
    guard.stop();
    REQUIRE(forced.ok());
    CHECK_MESSAGE(forced.changed, "round " << round << ": the forced release changed nothing");
    Reply after = require_ok(b->get(m, k_timeout));
    CHECK_MESSAGE(after.observed.lease.revoked_at(after.observed.now),
                  "round " << round << ": the lease is not revoked");
    b->end_revoked(m, "A", t, k_timeout);
  }
}

// A lease only held (a step's CMD ended; --min-hold) while the steps of
// one lease begin and end on it: on etcd each beginning moves it onto a
// new etcd lease, so a revoke of the one read a moment ago ends nothing.
TEST_CASE("release --force while steps begin and end: the lease is its owner's no more") {
  auto b = open_test_backend();
  for (int round = 0; round < 8; ++round) {
    auto m = unique_mutex("force-steps");
    uint64_t t = acquired(*b, m);
    REQUIRE(require_ok(b->hold(m, "A", t, 20000, k_timeout)).changed);
    Racer steps([&](Backend& own) {
      own.begin_step(m, "A", t, 10000, 10000, k_timeout);
      own.hold(m, "A", t, 20000, k_timeout);
      return true;
    });
    usleep(20000 + 5000 * round);
    Reply forced = b->force_release(m, 0, k_timeout);
    steps.stop();
    REQUIRE(forced.ok());
    CHECK_MESSAGE(forced.changed, "round " << round << ": the forced release changed nothing");
    Reply after = require_ok(b->get(m, k_timeout));
    CHECK_MESSAGE(!after.observed.lease.owned_by("A", after.observed.now),
                  "round " << round << ": A still owns it after the force");
    b->end_revoked(m, "A", t, k_timeout);
  }
}

// renew --lease while the steps of the lease begin and end: once the last
// step has ended, the lease is only held, and the next step may begin (on
// etcd, renew --lease judged "held or guarded" on one read and renewed on
// another: a step's end in between left it guarded, the next step refused).
TEST_CASE("renew --lease while steps begin and end: the next step may begin after the last") {
  auto b = open_test_backend();
  for (int round = 0; round < 4; ++round) {
    auto m = unique_mutex("extend-steps");
    uint64_t t = acquired(*b, m);
    REQUIRE(require_ok(b->hold(m, "A", t, 20000, k_timeout)).changed);
    int left = 30;
    Racer steps([&](Backend& own) {
      own.begin_step(m, "A", t, 10000, 10000, k_timeout);
      own.hold(m, "A", t, 20000, k_timeout);
      return --left > 0;
    });
    while (steps.running()) b->extend(m, "A", t, 10000, 10000, k_timeout);
    Reply next = require_ok(b->begin_step(m, "A", t, 10000, 10000, k_timeout));
    CHECK_MESSAGE(next.changed, "round " << round << ": the next step was refused");
    b->release(m, "A", t, k_timeout);
  }
}

// --slots 3, two slots owned and guarded as fast as their owners go: a
// third contender takes the free slot (on etcd, its claim compared every
// owner's key as read, lost to each guard's rewrite and gave up).
TEST_CASE("a free slot is taken while the other slots' owners guard") {
  auto b = open_test_backend();
  for (int round = 0; round < 6; ++round) {
    auto m = unique_mutex("slot-guarded");
    Reply a = require_ok(b->acquire_slot(m, "A", 3, 10000, 2000, k_timeout));
    Reply c = require_ok(b->acquire_slot(m, "B", 3, 10000, 2000, k_timeout));
    REQUIRE((a.changed && c.changed));
    auto guarding = [&](const Reply& r, const char* who) {
      std::string row = slot_row(m, r.observed.lease.slot);
      uint64_t t = r.observed.lease.fencing_token;
      return [row, t, who](Backend& own) {
        own.guard(row, who, t, 10000, 2000, k_timeout);
        return true;
      };
    };
    Racer guard_a(guarding(a, "A")), guard_b(guarding(c, "B"));
    usleep(20000 + 5000 * round);
    Reply third = b->acquire_slot(m, "C", 3, 10000, 2000, k_timeout);
    guard_a.stop();
    guard_b.stop();
    REQUIRE_MESSAGE(third.ok(), "round " << round << ": " << third.error);
    CHECK_MESSAGE(third.changed, "round " << round << ": the free slot was not taken");
  }
}
