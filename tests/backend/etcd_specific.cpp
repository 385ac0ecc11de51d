// Checks that only concern the etcd backend (src/backend/etcd/README.md,
// "Where it differs"): how its queue answers where the lease-row backends'
// cases of conformance*.cpp are left out (tests/backend/conformance_etcd.sh).
// They run when the suite runs against etcd (SIMBA_TEST_BACKEND=etcd...)
// and are skipped otherwise.
#include "support.hpp"

#include "backend/etcd/store.hpp"
#include "backend/uri.hpp"
#include "core/lease.hpp"
#include "sys/clock.hpp"

#include <doctest/doctest.h>

using simba::backend::Reply;
using namespace simba::test;

TEST_CASE("etcd: a lease that ran out goes when etcd's lease of its key ends, to the next in line") {
  if (!backend_is_etcd()) return;
  auto a = open_test_backend();
  auto b = open_test_backend();
  auto m = unique_mutex("etcd-expiry");
  Reply got = require_ok(a->acquire(m, "A", 300, 200, k_timeout));
  REQUIRE(got.changed);
  int64_t t0 = mono_ms();
  Reply busy = require_ok(b->acquire(m, "B", 300, 200, k_timeout)); // B queues
  CHECK_FALSE(busy.changed);
  CHECK(busy.observed.lease.owner_id == "A");
  // A never renews (killed): B gets the mutex once etcd's lease (1 s, one
  // more than asked) ends, and with a larger token; never before A's
  // lease as shown ran out.
  Reply r;
  do {
    sleep_ms(100);
    r = require_ok(b->acquire(m, "B", 300, 200, k_timeout));
  } while (!r.changed && mono_ms() - t0 < 5000);
  REQUIRE(r.changed);
  CHECK(mono_ms() - t0 >= 500);
  CHECK(r.observed.lease.fencing_token > got.observed.lease.fencing_token);
  MESSAGE("the next owner after " << mono_ms() - t0 << " ms (the lease shown: 500 ms)");
}

TEST_CASE("etcd: a waiter at the head whose place was revoked is shown the revocation on its own "
          "clock, and queues anew once its key is gone") {
  if (!backend_is_etcd()) return;
  auto a = open_test_backend();
  auto w = open_test_backend();
  auto m = unique_mutex("etcd-head-revoked");
  REQUIRE(require_ok(a->acquire(m, "A", 10000, 1000, k_timeout)).changed);
  CHECK_FALSE(require_ok(w->acquire(m, "W", 300, 200, k_timeout)).changed); // W queues
  REQUIRE(require_ok(a->release(m, "A", 0, k_timeout)).changed); // W's key is the oldest now
  // An admin's force release of whatever holds m: W's place, before W knew.
  REQUIRE(require_ok(a->force_release(m, 0, k_timeout)).changed);
  Reply r = require_ok(w->acquire(m, "W", 300, 200, k_timeout));
  CHECK_FALSE(r.changed);
  CHECK(simba::core::window_at(r.observed.lease, r.observed.now) == simba::core::Window::revoked);
  int64_t delay = r.observed.lease.transition_at - r.observed.now;
  CHECK(delay > 0);
  CHECK(delay <= 5000); // not the host's uptime
  // W's revoked key is no longer kept alive: it goes with its lease, and
  // W's next acquire queues anew (a new token).
  int64_t t0 = mono_ms();
  do {
    sleep_ms(200);
    r = require_ok(w->acquire(m, "W", 300, 200, k_timeout));
  } while (!r.changed && mono_ms() - t0 < 6000);
  CHECK(r.changed);
}

TEST_CASE("etcd: a busy contender that goes leaves the queue (its process's end)") {
  if (!backend_is_etcd()) return;
  auto a = open_test_backend();
  auto m = unique_mutex("etcd-leave");
  REQUIRE(require_ok(a->acquire(m, "A", 10000, 1000, k_timeout)).changed);
  {
    auto b = open_test_backend();
    CHECK_FALSE(require_ok(b->acquire(m, "B", 10000, 1000, k_timeout)).changed);
    simba::backend::Listing l = a->inspect(m, k_timeout);
    REQUIRE(l.ok);
    REQUIRE(l.mutexes.size() == 1);
    CHECK(l.mutexes[0].waiters.size() == 1);
  } // b's backend goes: its place too
  simba::backend::Listing l = a->inspect(m, k_timeout);
  REQUIRE(l.ok);
  REQUIRE(l.mutexes.size() == 1);
  CHECK(l.mutexes[0].waiters.empty());
  REQUIRE(require_ok(a->release(m, "A", 0, k_timeout)).changed);
  auto c = open_test_backend();
  CHECK(require_ok(c->acquire(m, "C", 10000, 1000, k_timeout)).changed); // nobody ahead
}

TEST_CASE("etcd: an owner's one-write release leaves a key a forced release rewrote to end_revoked") {
  if (!backend_is_etcd()) return;
  auto a = open_test_backend();
  auto admin = open_test_backend();
  auto b = open_test_backend();
  auto m = unique_mutex("etcd-release-revoked");
  Reply got = require_ok(a->acquire(m, "A", 10000, 1000, k_timeout));
  REQUIRE(got.changed);
  uint64_t t = got.observed.lease.fencing_token;
  CHECK_FALSE(require_ok(b->acquire(m, "B", 10000, 1000, k_timeout)).changed); // B queues
  REQUIRE(require_ok(admin->force_release(m, 0, k_timeout)).changed);
  // A's key changed since A last read it: its release (a step's CMD that
  // shares the token may still be stopping) neither deletes it nor frees
  // the mutex; only end_revoked does.
  CHECK_FALSE(require_ok(a->release(m, "A", t, k_timeout)).changed);
  CHECK_FALSE(require_ok(b->acquire(m, "B", 10000, 1000, k_timeout)).changed);
  REQUIRE(require_ok(a->end_revoked(m, "A", t, k_timeout)).changed);
  Reply next = require_ok(b->acquire(m, "B", 10000, 1000, k_timeout));
  REQUIRE(next.changed);
  CHECK(next.observed.lease.fencing_token > t);
  // B's own release, its key as it read it: one write, free at once.
  CHECK(require_ok(b->release(m, "B", next.observed.lease.fencing_token, k_timeout)).changed);
  Reply after = require_ok(a->get(m, k_timeout));
  CHECK(after.observed.lease.free_at(after.observed.now));
  CHECK(require_ok(a->acquire(m, "A", 10000, 1000, k_timeout)).changed);
}

TEST_CASE("etcd: a waiter that takes the mutex never shows its lease longer than etcd keeps it") {
  if (!backend_is_etcd()) return;
  auto a = open_test_backend();
  auto b = open_test_backend();
  auto m = unique_mutex("etcd-kept");
  REQUIRE(require_ok(a->acquire(m, "A", 3000, 1000, k_timeout)).changed);
  CHECK_FALSE(require_ok(b->acquire(m, "B", 3000, 1000, k_timeout)).changed); // queued: 5 s
  // Longer than the second granted over what it asked: B's place's lease no
  // longer covers a whole lease from now, so taking the mutex renews it.
  sleep_ms(2500);
  REQUIRE(require_ok(a->release(m, "A", 0, k_timeout)).changed);
  Reply r = require_ok(b->acquire(m, "B", 3000, 1000, k_timeout));
  REQUIRE(r.changed);
  int64_t shown = r.observed.lease.transition_at - r.observed.now;
  auto uri = std::get<simba::backend::EtcdUri>(simba::backend::parse_backend_uri(backend_uri()));
  simba::backend::etcd::Store store(uri);
  int64_t deadline = simba::sys::boottime_ms() + k_timeout;
  simba::backend::etcd::Seen s =
      store.read(m, simba::backend::etcd::queue_key(uri.prefix, m, "B"), deadline);
  REQUIRE(s.mine);
  int64_t left_s = store.seconds_left(s.mine->lease, deadline); // whole seconds
  MESSAGE("shown " << shown << " ms, etcd keeps the key " << left_s << " s more");
  CHECK(shown <= left_s * 1000 + 500);
}

// The release's event goes in the transaction that deletes the key
// (history.cpp): that transaction still compares the key, not only the
// history's record. A forced release that crashed after its rewrite, before
// its event (the record unchanged), must not let the release free the mutex.
TEST_CASE("etcd: an owner's release with its event leaves a key rewritten as revoked, its "
          "history unchanged") {
  if (!backend_is_etcd()) return;
  auto a = open_test_backend();
  auto b = open_test_backend();
  auto m = unique_mutex("etcd-release-event-revoked");
  Reply got = require_ok(a->acquire(m, "A", 10000, 1000, k_timeout));
  REQUIRE(got.changed);
  uint64_t t = got.observed.lease.fencing_token;
  CHECK_FALSE(require_ok(b->acquire(m, "B", 10000, 1000, k_timeout)).changed); // B queues
  auto uri = std::get<simba::backend::EtcdUri>(simba::backend::parse_backend_uri(backend_uri()));
  simba::backend::etcd::Store store(uri);
  int64_t deadline = simba::sys::boottime_ms() + k_timeout;
  simba::backend::etcd::Seen s =
      store.read(m, simba::backend::etcd::queue_key(uri.prefix, m, "A"), deadline);
  REQUIRE(s.mine);
  simba::backend::etcd::Entry e = s.mine->entry;
  e.revoked = true; // force_release's rewrite, without its history write
  bool done = false;
  REQUIRE(store.rewrite(s.mine->key, s.mine->mod_revision, e, "", done, deadline).ok());
  REQUIRE(done);
  CHECK_FALSE(require_ok(a->release(m, "A", t, k_timeout)).changed);
  CHECK_FALSE(require_ok(b->acquire(m, "B", 10000, 1000, k_timeout)).changed);
  REQUIRE(require_ok(a->end_revoked(m, "A", t, k_timeout)).changed);
  CHECK(require_ok(b->acquire(m, "B", 10000, 1000, k_timeout)).changed);
}
