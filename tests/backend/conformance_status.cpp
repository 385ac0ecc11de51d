// Conformance for status (Backend::inspect, set_holder): who holds a lease
// is stored by the acquisition itself and belongs to that lease (its token).
#include "support.hpp"

#include "backend/holder.hpp"

#include <doctest/doctest.h>

using simba::backend::Holder;
using simba::backend::Listing;
using simba::backend::MutexLease;
using simba::backend::Reply;
using namespace simba::test;

namespace {

Holder holder(const char* via, long pid, const char* host, const char* command) {
  return Holder{via, pid, host, command};
}

MutexLease inspect_one(simba::backend::Backend& b, const std::string& m) {
  Listing l = b.inspect(m, k_timeout);
  REQUIRE_MESSAGE(l.ok, l.error);
  REQUIRE(l.holders_kept);
  REQUIRE(l.mutexes.size() == 1);
  CHECK(l.mutexes[0].mutex == m);
  return l.mutexes[0];
}

} // namespace

TEST_CASE("holder: encoded and decoded, a tab in the command kept") {
  Holder h = holder("run", 4242, "build-3", "make\tall");
  std::optional<Holder> back = simba::backend::decode_holder(simba::backend::encode_holder(h));
  REQUIRE(back);
  CHECK(back->via == "run");
  CHECK(back->pid == 4242);
  CHECK(back->host == "build-3");
  CHECK(back->command == "make\tall");
  CHECK_FALSE(simba::backend::decode_holder("run\tx\thost\tcmd"));
  CHECK_FALSE(simba::backend::decode_holder(""));
}

TEST_CASE("inspect: acquire stores its holder with the lease; renewals keep it; the next "
          "acquisition replaces it, and one without a holder shows none") {
  auto a = open_test_backend();
  auto b = open_test_backend();
  auto c = open_test_backend();
  a->set_holder(holder("run", 101, "host-a", "make"));
  b->set_holder(holder("acquire", 202, "host-b", ""));
  auto m = unique_mutex("holder");

  Reply r = require_ok(a->acquire(m, "A#1", 10000, 2000, k_timeout));
  REQUIRE(r.changed);
  uint64_t token = r.observed.lease.fencing_token;
  MutexLease seen = inspect_one(*a, m);
  CHECK(seen.lease.owner_id == "A#1");
  REQUIRE(seen.holder);
  CHECK(seen.holder->via == "run");
  CHECK(seen.holder->pid == 101);
  CHECK(seen.holder->host == "host-a");
  CHECK(seen.holder->command == "make");

  // A renewal and a second acquire by the owner keep it; another process
  // reads the same.
  REQUIRE(require_ok(a->guard(m, "A#1", token, 10000, 2000, k_timeout)).changed);
  REQUIRE(require_ok(a->acquire(m, "A#1", 10000, 2000, k_timeout)).changed);
  seen = inspect_one(*c, m);
  REQUIRE(seen.holder);
  CHECK(seen.holder->pid == 101);
  CHECK(seen.waiters.empty());

  // b's acquire while held changes nothing.
  CHECK_FALSE(require_ok(b->acquire(m, "B#2", 10000, 2000, k_timeout)).changed);
  CHECK(inspect_one(*c, m).holder->pid == 101);

  REQUIRE(require_ok(a->release(m, "A#1", token, k_timeout)).changed);
  REQUIRE(require_ok(b->acquire(m, "B#2", 10000, 2000, k_timeout)).changed);
  seen = inspect_one(*c, m);
  REQUIRE(seen.holder);
  CHECK(seen.holder->via == "acquire");
  CHECK(seen.holder->pid == 202);
  CHECK(seen.holder->command.empty());

  // c never said who it is (an older simba, say): its lease shows no
  // holder, not b's -- also after a revocation, which leaves the row (and
  // the Redis hash) of b's lease behind.
  REQUIRE(require_ok(b->release(m, "B#2", 0, k_timeout)).changed);
  REQUIRE(require_ok(b->acquire(m, "B#2", 300, 100, k_timeout)).changed);
  REQUIRE(require_ok(b->force_release(m, 0, k_timeout)).changed);
  sleep_ms(500);
  REQUIRE(require_ok(c->acquire(m, "C#3", 10000, 2000, k_timeout)).changed);
  seen = inspect_one(*a, m);
  CHECK(seen.lease.owner_id == "C#3");
  CHECK_FALSE(seen.holder);
}

TEST_CASE("inspect: all mutexes or one; a mutex never acquired is free") {
  auto a = open_test_backend();
  a->set_holder(holder("lead", 7, "h", "daemon"));
  auto m1 = unique_mutex("inspect-all-1");
  auto m2 = unique_mutex("inspect-all-2");
  REQUIRE(require_ok(a->acquire(m1, "A#1", 10000, 2000, k_timeout)).changed);
  REQUIRE(require_ok(a->acquire(m2, "A#1", 10000, 2000, k_timeout)).changed);
  Listing all = a->inspect("", k_timeout);
  REQUIRE_MESSAGE(all.ok, all.error);
  int found = 0;
  for (const MutexLease& ml : all.mutexes)
    if (ml.mutex == m1 || ml.mutex == m2) {
      ++found;
      REQUIRE(ml.holder);
      CHECK(ml.holder->command == "daemon");
    }
  CHECK(found == 2);
  MutexLease never = inspect_one(*a, unique_mutex("inspect-never"));
  CHECK(never.lease.free_at(0));
  CHECK_FALSE(never.holder);
}
