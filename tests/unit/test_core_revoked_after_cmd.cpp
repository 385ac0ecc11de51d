// A release --force that lands once CMD and all it started are gone, before
// the owner's release (or --min-hold's hold) reaches the backend: that call
// finds the lease revoked and changes nothing. The owner then ends it by its
// token (action::EndRevoked), so that the waiters take the mutex at once
// instead of after the revoked lease's transition; never another lease,
// a quarantine, a slot's or a step's, and no lost event (nothing stopped).
#include "core/contender.hpp"
#include "core_support.hpp"
#include "fake_backend.hpp"

#include <doctest/doctest.h>

#include <functional>

using namespace simba;
using namespace simba::core;
using namespace simba::test;
using Mode = ContenderConfig::Mode;

namespace {

// Runs `acts` as the driver does: calls answered by the fake backend, the
// revoked lease's end applied to it, the exit noted; every action kept.
struct Owner {
  FakeBackend backend;
  int64_t local = 1000;
  Contender c;
  std::optional<int> exit_code;
  Actions log;

  explicit Owner(const ContenderConfig& cfg) : c(make_contender(cfg)) {}

  void run(Actions acts) {
    for (int round = 0; !acts.empty(); ++round) {
      REQUIRE(round < 100);
      Actions next;
      for (const Action& a : acts) {
        log.push_back(a);
        Actions more;
        if (const auto* call = std::get_if<action::Call>(&a))
          more = c.on_reply(local, backend.apply("m", "me", *call));
        else if (const auto* end = std::get_if<action::EndRevoked>(&a))
          backend.end_revoked("m", end->token);
        else if (const auto* exit = std::get_if<action::Exit>(&a))
          exit_code = exit->code;
        next.insert(next.end(), more.begin(), more.end());
      }
      acts = std::move(next);
    }
  }
  // CMD ran and exited with `code`; `between` happens before the actions
  // that follow (the release, or the hold) reach the backend.
  void cmd_exits_then(int code, const std::function<void()>& between) {
    run(c.start(local));
    REQUIRE(c.phase() == Contender::Phase::owning);
    local += 500;
    backend.now += 500;
    Actions after = c.on_child_exit(local, code, false);
    between();
    run(std::move(after));
  }
  template <class T> std::vector<T> all() const {
    std::vector<T> out;
    for (const Action& a : log)
      if (const T* x = std::get_if<T>(&a)) out.push_back(*x);
    return out;
  }
  bool others_may_take() { return backend.acquire("m", "other", 10000, 2000).changed; }
};

} // namespace

TEST_SUITE("core::Contender revoked after CMD") {
  TEST_CASE("run: a force between CMD's exit and the release: the revoked lease ends at once") {
    Owner o(contender_config());
    uint64_t token = 0;
    o.cmd_exits_then(3, [&] {
      token = o.backend.lease("m").fencing_token;
      REQUIRE(o.backend.force_release("m").changed);
    });
    REQUIRE(o.exit_code);
    CHECK(*o.exit_code == 3); // CMD ran its course: its status
    auto ends = o.all<action::EndRevoked>();
    REQUIRE(ends.size() == 1);
    CHECK(ends[0].token == token);
    CHECK(ends[0].timeout_ms > 0);
    CHECK(o.all<action::RecordLost>().empty()); // nothing was stopped
    CHECK(o.others_may_take());
  }

  TEST_CASE("--min-hold: a force before the hold: the revoked lease ends at once") {
    ContenderConfig cfg = contender_config();
    cfg.min_hold_ms = 60000;
    Owner o(cfg);
    o.cmd_exits_then(0, [&] { REQUIRE(o.backend.force_release("m").changed); });
    REQUIRE(o.exit_code);
    CHECK(*o.exit_code == 0);
    CHECK(o.all<action::EndRevoked>().size() == 1);
    CHECK(o.all<action::RecordLost>().empty());
    CHECK(o.others_may_take());
  }

  TEST_CASE("lead at its last run: the release that ends it ends the revoked lease too") {
    ContenderConfig cfg = contender_config("me", Mode::lead);
    cfg.restart = ContenderConfig::Restart::never;
    Owner o(cfg);
    o.cmd_exits_then(0, [&] { REQUIRE(o.backend.force_release("m").changed); });
    REQUIRE(o.exit_code);
    CHECK(o.all<action::EndRevoked>().size() == 1);
    CHECK(o.others_may_take());
  }

  TEST_CASE("nothing of ours revoked: another owner, a quarantine, a plain release") {
    Owner taken(contender_config());
    taken.cmd_exits_then(0, [&] { taken.backend.steal("m", "thief", 10000, 2000); });
    CHECK(taken.all<action::EndRevoked>().empty());

    // A quarantine is no revocation of ours (the server lost the lease
    // whose CMD may run anywhere): it runs out, even showing our token.
    Owner q(contender_config());
    q.cmd_exits_then(0, [&] { q.backend.quarantine("m", 20000); });
    CHECK(q.all<action::EndRevoked>().empty());
    CHECK_FALSE(q.others_may_take());

    Owner plain(contender_config());
    plain.cmd_exits_then(0, [] {});
    CHECK(plain.all<action::EndRevoked>().empty());
    CHECK(*plain.exit_code == 0);
  }

  TEST_CASE("--slots: a slot's revoked lease is left to run out") {
    ContenderConfig cfg = contender_config();
    cfg.slots = 2;
    Owner o(cfg);
    o.cmd_exits_then(0, [&] { REQUIRE(o.backend.force_release("m").changed); });
    CHECK(o.all<action::EndRevoked>().empty());
  }

  TEST_CASE("after a loss the lost event asks for the end: no second one") {
    Owner o(contender_config());
    o.run(o.c.start(o.local));
    REQUIRE(o.backend.force_release("m").changed);
    o.run(o.c.on_notify(o.local)); // the guard sees it: CMD is stopped
    o.run(o.c.on_child_exit(o.local, 143, false));
    REQUIRE(o.exit_code);
    CHECK(*o.exit_code == 76);
    auto lost = o.all<action::RecordLost>();
    REQUIRE(lost.size() == 1);
    CHECK(lost[0].end_revoked);
    CHECK(o.all<action::EndRevoked>().empty());
  }
}
