// A backend that refuses (Reply::Status::refused: an ACL, a missing GRANT)
// ends the contender at once with 69: a waiter does not back off and retry,
// an owner stops CMD now instead of at its kill point, a refused release
// keeps CMD's code.
#include "core/contender.hpp"
#include "core_support.hpp"
#include "fake_backend.hpp"

#include <doctest/doctest.h>

#include <csignal>

using namespace simba;
using namespace simba::core;
using namespace simba::test;

namespace {

CallResult refusal(const std::string& text) {
  CallResult r;
  r.status = CallResult::Status::refused;
  r.error = text;
  return r;
}

} // namespace

TEST_SUITE("core::Contender refused") {
  TEST_CASE("a refused acquire ends a waiter at once: 69, one error line, no retry") {
    for (bool no_wait : {false, true}) {
      CAPTURE(no_wait);
      ContenderConfig cfg = contender_config();
      cfg.no_wait = no_wait;
      Contender c = make_contender(cfg);
      Actions a = c.start(1000);
      REQUIRE(find<action::Call>(a));
      a = c.on_reply(1001, refusal("X refused acquire for m: NOPERM"));
      REQUIRE(find<action::Exit>(a));
      CHECK(find<action::Exit>(a)->code == 69);
      CHECK_FALSE(find<action::Call>(a)); // nothing of ours to release
      REQUIRE(find<action::Log>(a));
      CHECK(find<action::Log>(a)->level == LogLevel::error);
      CHECK(find<action::Log>(a)->message == "X refused acquire for m: NOPERM");
      CHECK_FALSE(find<action::Notice>(a)); // not "backend failing"
      CHECK(c.phase() == Contender::Phase::done);
      CHECK_FALSE(c.wake_at());
    }
  }

  TEST_CASE("a refused acquire after an unanswered one releases what it may hold, then 69") {
    Contender c = make_contender(contender_config());
    Actions a = c.start(1000);
    CallResult unknown;
    unknown.status = CallResult::Status::indeterminate;
    unknown.error = "timeout";
    a = c.on_reply(3000, unknown);
    a = c.on_timer(*c.wake_at());
    REQUIRE(find<action::Call>(a));
    a = c.on_reply(*c.wake_at() + 1, refusal("refused"));
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::release);
    CHECK(find<action::Call>(a)->token == 0);
    a = c.on_reply(4000, refusal("refused release"));
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 69);
  }

  TEST_CASE("a refused guard stops CMD at once, releases, exits 69 (run and lead)") {
    for (auto mode : {ContenderConfig::Mode::run, ContenderConfig::Mode::lead}) {
      CAPTURE(int(mode));
      test::FakeBackend backend;
      int64_t local = 5000;
      Contender c = make_contender(contender_config("me", mode));
      Actions a = c.start(local);
      a = c.on_reply(local, backend.apply("m", "me", *find<action::Call>(a)));
      REQUIRE(find<action::StartChild>(a));
      int64_t kill_point = find<action::StartChild>(a)->deadline - 1000;
      local = *c.wake_at();
      a = c.on_timer(local);
      REQUIRE(find<action::Call>(a));
      CHECK(find<action::Call>(a)->op == Op::guard);
      a = c.on_reply(local + 2, refusal("X refused renew for m: NOPERM"));
      REQUIRE(find<action::SignalAll>(a));
      CHECK(find<action::SignalAll>(a)->signo == SIGTERM);
      CHECK(local + 2 < kill_point); // now, not at the kill point
      REQUIRE(find<action::Log>(a));
      CHECK(find<action::Log>(a)->level == LogLevel::error);
      CHECK(find<action::Log>(a)->message == "X refused renew for m: NOPERM; stopping the command");
      CHECK(c.phase() == Contender::Phase::stopping);
      a = c.on_child_exit(local + 50, 143, false);
      REQUIRE(find<action::Call>(a)); // lead too: no contending again
      CHECK(find<action::Call>(a)->op == Op::release);
      a = c.on_reply(local + 60, refusal("X refused release for m: NOPERM"));
      REQUIRE(find<action::Exit>(a));
      CHECK(find<action::Exit>(a)->code == 69);
      REQUIRE(find<action::Log>(a));
      CHECK(find<action::Log>(a)->level == LogLevel::warning);
    }
  }

  TEST_CASE("a refused release keeps CMD's code and warns that the lease expires by itself") {
    test::FakeBackend backend;
    Contender c = make_contender(contender_config());
    Actions a = c.start(5000);
    a = c.on_reply(5000, backend.apply("m", "me", *find<action::Call>(a)));
    a = c.on_child_exit(5100, 3, false);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::release);
    a = c.on_reply(5101, refusal("X refused release for m: NOPERM"));
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 3);
    REQUIRE(find<action::Log>(a));
    CHECK(find<action::Log>(a)->level == LogLevel::warning);
    CHECK(find<action::Log>(a)->message ==
          "X refused release for m: NOPERM; the lease expires by itself");
  }
}
