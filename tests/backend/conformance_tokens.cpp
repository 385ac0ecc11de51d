// Conformance of the compare-and-set on owner and token (DESIGN §9), for
// every operation that takes a token: the right owner with a wrong token
// (one below, one above) changes nothing -- not the lease, not the slots'
// marker, not the done record of --once-per, not the last run's start of
// schedule. conformance.cpp has guard, release and force_release of a plain
// lease; here are the rest: hold, extend, release_once, guard_mark, and
// every one of them on a slot's row. Each case ends with the right token,
// which does change the lease: the wrong one was refused for being wrong.
#include "support.hpp"

#include "core/once_per.hpp"
#include "core/slots.hpp"

#include <doctest/doctest.h>

using simba::backend::Backend;
using simba::backend::Reply;
using simba::core::Lease;
using simba::core::slot_row;
using namespace simba::test;

namespace {

// `name`'s lease is still `was`.
void unchanged(Backend& b, const std::string& name, const Lease& was) {
  Reply now = require_ok(b.get(name, k_timeout));
  CHECK(same_lease(now.observed.lease, was));
  CHECK(now.observed.lease.valid_at(now.observed.now));
}

// guard, hold, extend, release and force_release of `name` by `who` with
// each wrong token: not changed, the lease as `was` (and the marker of a
// slot's mutex as `marker_was`).
void wrong_tokens_change_nothing(Backend& b, const std::string& name, const std::string& who,
                                 const Lease& was, const std::string& marker = "",
                                 const Lease& marker_was = {}) {
  uint64_t t = was.fencing_token;
  for (uint64_t wrong : {t - 1, t + 1}) {
    CAPTURE(wrong);
    CHECK_FALSE(require_ok(b.guard(name, who, wrong, 20000, 1000, k_timeout)).changed);
    CHECK_FALSE(require_ok(b.hold(name, who, wrong, 20000, k_timeout)).changed);
    CHECK_FALSE(require_ok(b.extend(name, who, wrong, 20000, 1000, k_timeout)).changed);
    CHECK_FALSE(require_ok(b.guard_mark(name, who, wrong, 20000, 1000, true, k_timeout)).changed);
    CHECK_FALSE(require_ok(b.release(name, who, wrong, k_timeout)).changed);
    CHECK_FALSE(require_ok(b.force_release(name, wrong, k_timeout)).changed);
    unchanged(b, name, was);
    if (!marker.empty()) unchanged(b, marker, marker_was);
  }
}

constexpr int64_t k_day = 86400000;

} // namespace

TEST_CASE("hold, extend and guard_mark by the right owner with a wrong token change nothing; "
          "guard_mark records no run") {
  auto b = open_test_backend();
  auto m = unique_mutex("cas-all");
  Reply a = require_ok(b->acquire(m, "A", 10000, 1000, k_timeout));
  REQUIRE(a.changed);
  wrong_tokens_change_nothing(*b, m, "A", a.observed.lease);
  uint64_t t = a.observed.lease.fencing_token;
  // No wrong guard_mark recorded a run: the right one reads none.
  Reply mark = require_ok(b->guard_mark(m, "A", t, 10000, 1000, false, k_timeout));
  CHECK(mark.changed);
  CHECK_FALSE(mark.last_run_at);
  CHECK(require_ok(b->hold(m, "A", t, 10000, k_timeout)).changed);
  CHECK(require_ok(b->extend(m, "A", t, 10000, 1000, k_timeout)).changed);
  CHECK(require_ok(b->release(m, "A", t, k_timeout)).changed);
}

TEST_CASE("release_once by the right owner with a wrong token changes nothing: the lease runs, "
          "its done record stays unfinished") {
  auto b = open_test_backend();
  auto m = unique_mutex("cas-once");
  int64_t now = require_ok(b->get(m, k_timeout)).observed.now;
  simba::core::OncePer o;
  o.period_ms = k_day;
  o.offset_ms = ((now - 3600000) % k_day + k_day) % k_day; // no boundary near
  Reply a = require_ok(b->acquire_once(m, "A", 10000, 1000, o, "host-a", "h", k_timeout));
  REQUIRE(a.changed);
  REQUIRE(a.done);
  uint64_t t = a.observed.lease.fencing_token;
  for (uint64_t wrong : {t - 1, t + 1}) {
    CAPTURE(wrong);
    Reply r = require_ok(b->release_once(m, "A", wrong, 0, k_timeout));
    CHECK_FALSE(r.changed);
    unchanged(*b, m, a.observed.lease);
    Reply rec = require_ok(b->done_record(m, k_timeout));
    REQUIRE(rec.done);
    CHECK_FALSE(rec.done->finished);
    CHECK(rec.done->token == t);
  }
  // Nor does another owner with the right token.
  CHECK_FALSE(require_ok(b->release_once(m, "B", t, 0, k_timeout)).changed);
  unchanged(*b, m, a.observed.lease);
  // The right one ends it and finishes the record.
  Reply r = require_ok(b->release_once(m, "A", t, 0, k_timeout));
  CHECK(r.changed);
  REQUIRE(r.done);
  CHECK(r.done->finished);
}

TEST_CASE("on a slot's row too: guard, hold, extend, guard_mark, release and force_release with "
          "a wrong token change neither the slot nor the marker") {
  auto b = open_test_backend();
  REQUIRE(b->has_slots());
  auto m = unique_mutex("cas-slots");
  Reply a = require_ok(b->acquire_slot(m, "A", 2, 10000, 1000, k_timeout));
  REQUIRE(a.changed);
  const Lease& held = a.observed.lease;
  std::string row = slot_row(m, held.slot);
  Lease slot = require_ok(b->get(row, k_timeout)).observed.lease;
  REQUIRE(slot.fencing_token == held.fencing_token);
  Lease marker = require_ok(b->get(m, k_timeout)).observed.lease;
  wrong_tokens_change_nothing(*b, row, "A", slot, m, marker);
  CHECK(require_ok(b->guard(row, "A", held.fencing_token, 10000, 1000, k_timeout)).changed);
  CHECK(require_ok(b->release(row, "A", held.fencing_token, k_timeout)).changed);
}
