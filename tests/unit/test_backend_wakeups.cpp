// The wake-ups' lifecycle (backend/wakeups.hpp) as QueueWakeups turns it
// into a backend's calls: queued once, the place kept by a new owner until
// it settles, the end of the queue when waiting again.
#include "backend/wakeups.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace simba::backend;

namespace {

// Records the calls as "join", "leave" (watch with waiting true or false),
// "upkeep", "drain"; a wake-up channel on descriptor 7.
class Recorder final : public QueueWakeups {
public:
  std::vector<std::string> calls;
  bool ours = true;
  std::optional<Grant> grant;

  void aim(const std::string& mutex, const std::string& contender) { target(mutex, contender); }

protected:
  int watch(const std::string& mutex, const std::string& contender, bool waiting) override {
    CHECK(mutex == "m");
    CHECK(contender == "c");
    calls.push_back(waiting ? "join" : "leave");
    return 7;
  }
  bool drain_wakeups() override {
    calls.push_back("drain");
    return ours;
  }
  std::optional<Grant> take_grant() override { return std::exchange(grant, std::nullopt); }
  void upkeep() override { calls.push_back("upkeep"); }
};

using Calls = std::vector<std::string>;

} // namespace

TEST_SUITE("backend::wakeups") {
  TEST_CASE("a waiter that becomes the owner keeps its place until it settles") {
    Recorder r;
    r.aim("m", "c");
    CHECK(r.wait() == 7);
    CHECK(r.wait() == 7); // every turn: the channel set up again if it broke
    CHECK(r.calls == Calls{"join", "join"});
    r.calls.clear();
    CHECK(r.own() == 7); // the hand-over's path: no call
    CHECK(r.own() == 7);
    CHECK(r.calls.empty());
    r.settle(); // the upkeep, then the queue is left
    CHECK(r.calls == Calls{"upkeep", "leave"});
    r.calls.clear();
    CHECK(r.own() == 7);
    r.settle(); // a later CMD: the upkeep only
    CHECK(r.calls == Calls{"leave", "upkeep"});
  }

  TEST_CASE("waiting again before settling goes to the end of the queue") {
    Recorder r;
    r.aim("m", "c");
    r.wait();
    r.own();
    r.calls.clear();
    r.wait();
    CHECK(r.calls == Calls{"leave", "join"});
  }

  TEST_CASE("an owner that never waited listens without a place; waiting later joins") {
    Recorder r;
    r.aim("m", "c");
    CHECK(r.own() == 7);
    r.settle();
    r.wait();
    CHECK(r.calls == Calls{"leave", "upkeep", "join"});
  }

  TEST_CASE("wake: nothing, a look, or a grant") {
    Recorder r;
    r.aim("m", "c");
    r.ours = false;
    CHECK(r.wake().kind == Wake::Kind::none);
    r.ours = true;
    CHECK(r.wake().kind == Wake::Kind::look);
    Grant g;
    g.sent_at_ms = 42;
    r.grant = g;
    Wake w = r.wake();
    CHECK(w.kind == Wake::Kind::grant);
    CHECK(w.grant.sent_at_ms == 42);
    CHECK(r.wake().kind == Wake::Kind::look); // the grant came once
  }

  TEST_CASE("a backend without notifications: no descriptor, no wake") {
    Wakeups& none = no_wakeups();
    CHECK(none.wait() == -1);
    CHECK(none.own() == -1);
    none.settle();
    CHECK_FALSE(none.wake());
  }
}
