// The split-phase lease's rules in the core: the handle (core/lease_handle)
// and the contender's acquire and step modes (core/contender_lease.cpp).
#include "core/contender.hpp"
#include "core/error.hpp"
#include "core/lease_handle.hpp"
#include "core_support.hpp"
#include "fake_backend.hpp"

#include <doctest/doctest.h>

#include <csignal>

using namespace simba;
using namespace simba::core;
using namespace simba::test;

namespace {

bool has_release(const Actions& acts) {
  for (const auto& a : acts) {
    if (const auto* c = std::get_if<action::Call>(&a); c && c->op == Op::release) return true;
    if (std::get_if<action::Disown>(&a)) return true;
  }
  return false;
}

LeaseHandle sample() {
  LeaseHandle h;
  h.backend = backend_fingerprint("sqlite:///tmp/x.db");
  h.mutex = "deploy:prod/eu@1.2_x-y";
  h.owner_id = "ci=job:42/\"a'b\"$x#0123456789abcdef";
  h.token = 1796093203383000;
  h.ttl_ms = 1800000;
  h.transition_ms = 2000;
  return h;
}

constexpr int64_t k_local = 5000;

} // namespace

TEST_SUITE("core::LeaseHandle") {
  TEST_CASE(
      "any mutex name and owner id survive the round trip, in shell- and env-file-safe text") {
    LeaseHandle h = sample();
    std::string text = encode_lease_handle(h);
    CHECK(text.rfind("simba1.", 0) == 0);
    CHECK(text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                 "-_.") == std::string::npos);
    LeaseHandle back = decode_lease_handle(text);
    CHECK(back.backend == h.backend);
    CHECK(back.mutex == h.mutex);
    CHECK(back.owner_id == h.owner_id);
    CHECK(back.token == h.token);
    CHECK(back.ttl_ms == h.ttl_ms);
    CHECK(back.transition_ms == h.transition_ms);
  }

  TEST_CASE("a handle of a slot keeps its slot and N; a plain one's text has no slot line") {
    LeaseHandle h = sample();
    std::string plain = encode_lease_handle(h);
    h.slot = 2;
    h.slots = 3;
    std::string slotted = encode_lease_handle(h);
    CHECK(slotted != plain);
    LeaseHandle back = decode_lease_handle(slotted);
    CHECK(back.slot == 2);
    CHECK(back.slots == 3);
    CHECK(lease_name(back) == h.mutex + "#2");
    LeaseHandle p = decode_lease_handle(plain);
    CHECK(p.slots == 1);
    CHECK(lease_name(p) == h.mutex);
    // A slot outside N is refused.
    h.slot = 3;
    CHECK_THROWS_AS(decode_lease_handle(encode_lease_handle(h)), UsageError);
  }

  TEST_CASE("a malformed handle is a usage error (64)") {
    std::string good = encode_lease_handle(sample());
    LeaseHandle zero = sample();
    zero.token = 0;
    LeaseHandle bad_mutex = sample();
    bad_mutex.mutex = "a b";
    LeaseHandle no_instance = sample();
    no_instance.owner_id = "label-without-instance-id";
    for (const std::string& text :
         {std::string(), std::string("simba1."), std::string("x") + good,
          good.substr(0, good.size() - 3), good + "!", good.substr(0, good.size() - 1) + "_",
          std::string("simba2.") + good.substr(7), encode_lease_handle(zero),
          encode_lease_handle(bad_mutex), encode_lease_handle(no_instance)}) {
      CAPTURE(text);
      try {
        decode_lease_handle(text);
        FAIL("accepted");
      } catch (const UsageError& e) {
        CHECK(e.code() == 64);
        CHECK(std::string(e.what()).find('\n') == std::string::npos);
      }
    }
  }

  TEST_CASE("the backend fingerprint tells backends apart") {
    CHECK(backend_fingerprint("sqlite:///a.db") == backend_fingerprint("sqlite:///a.db"));
    CHECK(backend_fingerprint("sqlite:///a.db") != backend_fingerprint("sqlite:///b.db"));
    CHECK(backend_fingerprint("redis://h:6379/0").size() == 16);
  }
}

TEST_SUITE("core::Contender acquire and step") {
  TEST_CASE("acquire: keeps the lease marked as only held for ttl + transition, starts nothing, "
            "never releases, and hands the lease out") {
    test::FakeBackend b;
    Contender c = make_contender(contender_config("job#1", ContenderConfig::Mode::acquire));
    Actions a = c.start(k_local);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::acquire);
    a = c.on_reply(k_local, b.apply("m", "job#1", *find<action::Call>(a)));
    CHECK_FALSE(find<action::StartChild>(a));
    const action::Call* hold = find<action::Call>(a);
    REQUIRE(hold);
    CHECK(hold->op == Op::hold);
    CHECK(hold->ttl_ms == 12000);
    CHECK(hold->token == b.lease("m").fencing_token);
    a = c.on_reply(k_local + 1, b.apply("m", "job#1", *hold));
    CHECK_FALSE(has_release(a));
    REQUIRE(find<action::Leased>(a));
    CHECK(find<action::Leased>(a)->lease.fencing_token == b.lease("m").fencing_token);
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 0);
    CHECK(b.lease("m").owner_id == "job#1");
    CHECK(b.lease("m").holding);
    CHECK(b.lease("m").transition_at == b.now + 12000);
  }

  TEST_CASE("acquire: busy with --no-wait exits 75, holding nothing") {
    test::FakeBackend b;
    b.steal("m", "other#2", 10000, 2000);
    ContenderConfig cfg = contender_config("job#1", ContenderConfig::Mode::acquire);
    cfg.no_wait = true;
    Contender c = make_contender(cfg);
    Actions a = c.start(k_local);
    a = c.on_reply(k_local, b.apply("m", "job#1", *find<action::Call>(a)));
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 75);
    CHECK_FALSE(find<action::Leased>(a));
  }

  TEST_CASE("acquire: a stop signal between acquiring and keeping gives the lease back") {
    test::FakeBackend b;
    Contender c = make_contender(contender_config("job#1", ContenderConfig::Mode::acquire));
    Actions a = c.start(k_local);
    a = c.on_reply(k_local, b.apply("m", "job#1", *find<action::Call>(a)));
    const action::Call hold = *find<action::Call>(a); // in flight
    CHECK(c.on_signal(k_local + 1, SIGTERM).empty());
    a = c.on_reply(k_local + 2, b.apply("m", "job#1", hold));
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::release);
    a = c.on_reply(k_local + 3, b.apply("m", "job#1", *find<action::Call>(a)));
    CHECK_FALSE(find<action::Leased>(a));
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 128 + SIGTERM);
    CHECK(b.lease("m").owner_id.empty());
  }

  // The held lease a step starts from: acquired by job#1 and kept.
  struct Held {
    test::FakeBackend b;
    uint64_t token = 0;
    Held() {
      b.acquire("m", "job#1", 10000, 2000);
      token = b.lease("m").fencing_token;
      b.hold("m", "job#1", token, 12000);
    }
    Contender step() {
      ContenderConfig cfg = contender_config("job#1", ContenderConfig::Mode::step);
      cfg.lease_token = token;
      return make_contender(cfg);
    }
  };

  TEST_CASE("step: guards first, runs CMD, then keeps the lease for a full ttl instead of "
            "releasing it, and exits with CMD's status") {
    Held h;
    Contender c = h.step();
    Actions a = c.start(k_local);
    REQUIRE(find<action::Call>(a));
    CHECK(find<action::Call>(a)->op == Op::guard);
    CHECK(find<action::Call>(a)->token == h.token);
    CHECK_FALSE(find<action::StartChild>(a));
    a = c.on_reply(k_local, h.b.apply("m", "job#1", *find<action::Call>(a)));
    REQUIRE(find<action::StartChild>(a));
    CHECK_FALSE(h.b.lease("m").holding); // guarded by this step now
    h.b.now += 3000;
    a = c.on_child_exit(k_local + 3000, 7, false);
    CHECK_FALSE(has_release(a));
    const action::Call* keep = find<action::Call>(a);
    REQUIRE(keep);
    CHECK(keep->op == Op::hold);
    CHECK(keep->ttl_ms == 12000);
    a = c.on_reply(k_local + 3000, h.b.apply("m", "job#1", *keep));
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 7);
    CHECK(h.b.lease("m").owner_id == "job#1");
    CHECK(h.b.lease("m").fencing_token == h.token);
    CHECK(h.b.lease("m").holding);
    CHECK(h.b.lease("m").transition_at == h.b.now + 12000);
  }

  TEST_CASE("step: a lease that is gone (expired, forced, replaced) -> 76, CMD never starts") {
    for (int how = 0; how < 3; ++how) {
      CAPTURE(how);
      Held h;
      if (how == 0) h.b.now += 12001; // expired
      if (how == 1) h.b.force_release("m", h.token);
      if (how == 2) {
        h.b.release("m", "job#1", h.token);
        h.b.acquire("m", "job#2", 10000, 2000); // another job's lease now
      }
      Contender c = h.step();
      Actions a = c.start(k_local);
      a = c.on_reply(k_local, h.b.apply("m", "job#1", *find<action::Call>(a)));
      CHECK_FALSE(find<action::StartChild>(a));
      CHECK_FALSE(has_release(a));
      REQUIRE(find<action::Exit>(a));
      CHECK(find<action::Exit>(a)->code == 76);
    }
  }

  TEST_CASE("step: a stop signal while the lease is being confirmed: CMD never starts, the "
            "lease is kept, simba ends by the signal") {
    Held h;
    Contender c = h.step();
    Actions a = c.start(k_local);
    action::Call guard = *find<action::Call>(a);
    CHECK_FALSE(find<action::StartChild>(c.on_signal(k_local + 10, SIGTERM)));
    a = c.on_reply(k_local + 20, h.b.apply("m", "job#1", guard));
    CHECK_FALSE(find<action::StartChild>(a));
    CHECK_FALSE(has_release(a));
    const action::Call* keep = find<action::Call>(a);
    REQUIRE(keep);
    CHECK(keep->op == Op::hold);
    a = c.on_reply(k_local + 30, h.b.apply("m", "job#1", *keep));
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 128 + SIGTERM);
    CHECK(find<action::Exit>(a)->signo == SIGTERM);
    CHECK(h.b.lease("m").owner_id == "job#1");
    CHECK(h.b.lease("m").holding);
  }

  TEST_CASE("step: a second step while one runs under the lease -> 75, CMD never starts, the "
            "lease stays the running step's (never marked as only held)") {
    Held h;
    Contender first = h.step();
    Actions a = first.start(k_local);
    CHECK(find<action::Call>(a)->step_start);
    a = first.on_reply(k_local, h.b.apply("m", "job#1", *find<action::Call>(a)));
    REQUIRE(find<action::StartChild>(a));
    CHECK_FALSE(h.b.lease("m").holding); // a step runs
    Contender second = h.step();
    a = second.start(k_local + 100);
    a = second.on_reply(k_local + 100, h.b.apply("m", "job#1", *find<action::Call>(a)));
    CHECK_FALSE(find<action::StartChild>(a));
    CHECK_FALSE(find<action::Call>(a)); // no hold: that would mark the running step's lease
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 75);
    CHECK_FALSE(h.b.lease("m").holding);
    CHECK(h.b.lease("m").owner_id == "job#1");
  }

  TEST_CASE("step: a backend that fails before CMD -> 69, CMD never starts") {
    Held h;
    Contender c = h.step();
    Actions a = c.start(k_local);
    CallResult failed;
    failed.status = CallResult::Status::failed;
    failed.error = "down";
    a = c.on_reply(k_local, failed);
    CHECK_FALSE(find<action::StartChild>(a));
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 69);
  }

  TEST_CASE("step: a step longer than the ttl renews the lease, and a loss stops CMD and exits 76 "
            "without a release") {
    Held h;
    Contender c = h.step();
    Actions a = c.start(k_local);
    a = c.on_reply(k_local, h.b.apply("m", "job#1", *find<action::Call>(a)));
    REQUIRE(find<action::StartChild>(a));
    int64_t local = k_local;
    for (int i = 0; i < 5; ++i) { // 5 guards: well past one ttl
      int64_t at = *c.wake_at();
      h.b.now += at - local;
      local = at;
      a = c.on_timer(local);
      REQUIRE(find<action::Call>(a));
      CHECK(find<action::Call>(a)->op == Op::guard);
      a = c.on_reply(local, h.b.apply("m", "job#1", *find<action::Call>(a)));
      CHECK_FALSE(find<action::SignalAll>(a));
    }
    CHECK(local - k_local > 10000);
    CHECK(h.b.lease("m").owner_id == "job#1");
    h.b.force_release("m", h.token);
    a = c.on_notify(local);
    a = c.on_reply(local, h.b.apply("m", "job#1", *find<action::Call>(a)));
    REQUIRE(find<action::SignalAll>(a));
    a = c.on_child_exit(local + 10, 143, false);
    CHECK_FALSE(has_release(a));
    REQUIRE(find<action::Exit>(a));
    CHECK(find<action::Exit>(a)->code == 76);
  }
}
