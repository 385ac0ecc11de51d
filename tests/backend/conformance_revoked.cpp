// Conformance for Backend::end_revoked (issue 31 §4): after release
// --force, the revoked owner stops its CMD in milliseconds and then ends
// the revoked lease, so that the mutex is not blocked for the rest of the
// revoked lease's transition. Only that lease, by its token, and only
// while it is revoked: a valid lease, another token, 0 and a lease already
// free are left as they are.
#include "support.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using simba::backend::Reply;
using namespace simba::test;

namespace {

std::vector<std::string> event_names(simba::backend::Backend& b, const std::string& m) {
  simba::backend::History h = b.history(m, 0, k_timeout);
  REQUIRE_MESSAGE(h.ok, h.error);
  std::vector<std::string> names;
  for (const auto& e : h.events) names.push_back(e.event);
  return names;
}

} // namespace

TEST_CASE("end_revoked ends a revoked lease by its token at once; nothing else") {
  auto b = open_test_backend();
  auto m = unique_mutex("end-revoked");
  Reply a = require_ok(b->acquire(m, "A", 10000, 10000, k_timeout));
  uint64_t t = a.observed.lease.fencing_token;
  // A valid lease is no revoked one: unchanged, by any token.
  CHECK_FALSE(require_ok(b->end_revoked(m, "A", t, k_timeout)).changed);
  CHECK(require_ok(b->get(m, k_timeout)).observed.lease.owner_id == "A");
  REQUIRE(require_ok(b->force_release(m, 0, k_timeout)).changed);
  // Another token, or 0: nothing; the mutex stays revoked.
  CHECK_FALSE(require_ok(b->end_revoked(m, "A", t + 1, k_timeout)).changed);
  CHECK_FALSE(require_ok(b->end_revoked(m, "A", 0, k_timeout)).changed);
  CHECK_FALSE(require_ok(b->acquire(m, "B", 10000, 1000, k_timeout)).changed);
  // release and release_lease never end it (their callers may share the
  // token with a step whose CMD still stops): only end_revoked does.
  CHECK_FALSE(require_ok(b->release(m, "A", t, k_timeout)).changed);
  CHECK_FALSE(require_ok(b->release_lease(m, t, k_timeout)).changed);
  CHECK_FALSE(require_ok(b->acquire(m, "B", 10000, 1000, k_timeout)).changed);
  // By its token: it ends now.
  Reply ended = require_ok(b->end_revoked(m, "A", t, k_timeout));
  CHECK(ended.changed);
  CHECK(ended.observed.lease.free_at(ended.observed.now));
  Reply next = require_ok(b->acquire(m, "B", 10000, 1000, k_timeout));
  REQUIRE(next.changed);
  CHECK(next.observed.lease.fencing_token > t);
  // The old token again: B's lease stands.
  CHECK_FALSE(require_ok(b->end_revoked(m, "A", t, k_timeout)).changed);
  Reply now = require_ok(b->get(m, k_timeout));
  CHECK(now.observed.lease.owned_by("B", now.observed.now));
  // The revocation was the event; its end adds none.
  CHECK(event_names(*b, m) == std::vector<std::string>{"acquired", "forced", "acquired"});
}

TEST_CASE("end_revoked of a mutex never held, or released, changes nothing") {
  auto b = open_test_backend();
  auto m = unique_mutex("end-revoked-free");
  CHECK_FALSE(require_ok(b->end_revoked(m, "A", 1, k_timeout)).changed);
  Reply a = require_ok(b->acquire(m, "A", 10000, 1000, k_timeout));
  uint64_t t = a.observed.lease.fencing_token;
  REQUIRE(require_ok(b->release(m, "A", t, k_timeout)).changed);
  CHECK_FALSE(require_ok(b->end_revoked(m, "A", t, k_timeout)).changed);
}

