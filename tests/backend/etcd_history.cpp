// The history and counters of the etcd backend on etcd's own time
// (src/backend/etcd/README.md "History"): the counter and lost-event cases
// of conformance_lost.cpp take a lease that ran out 400 ms before, which
// etcd keeps a second or two longer (tests/backend/conformance_etcd.sh
// leaves them out); here the same rules with a wait that etcd's lease
// ends in. Skipped unless the suite runs against etcd.
#include "support.hpp"

#include <doctest/doctest.h>

using simba::backend::HistoryEvent;
using simba::backend::Listing;
using simba::backend::LostLease;
using simba::backend::Reply;
using namespace simba::test;

namespace {

std::pair<int64_t, int64_t> counters(simba::backend::Backend& b, const std::string& m) {
  Listing l = b.inspect(m, k_timeout);
  REQUIRE_MESSAGE(l.ok, l.error);
  REQUIRE(l.mutexes.size() == 1);
  REQUIRE(l.mutexes[0].acquisitions);
  REQUIRE(l.mutexes[0].losses);
  return {*l.mutexes[0].acquisitions, *l.mutexes[0].losses};
}

// Acquires `m` for `who` once etcd has let the key before it go.
Reply acquire_when_free(simba::backend::Backend& b, const std::string& m, const char* who) {
  Reply r;
  for (int64_t until = mono_ms() + 6000; mono_ms() < until; sleep_ms(100)) {
    r = require_ok(b.acquire(m, who, 10000, 2000, k_timeout));
    if (r.changed) break;
  }
  REQUIRE(r.changed);
  return r;
}

} // namespace

TEST_CASE("etcd history: an expiry is written by the next acquisition and counted once; the "
          "holder's late lost event adds no loss; a forced release is one") {
  if (!backend_is_etcd()) return;
  auto a = open_test_backend();
  auto m = unique_mutex("etcd-history");
  CHECK(counters(*a, m) == std::pair<int64_t, int64_t>{0, 0});
  uint64_t t = require_ok(a->acquire(m, "A", 300, 200, k_timeout)).observed.lease.fencing_token;
  // Its event written in the transaction that queued it, to be numbered by
  // the next write: counted and shown already.
  CHECK(counters(*a, m) == std::pair<int64_t, int64_t>{1, 0});
  simba::backend::History first = a->history(m, 0, k_timeout);
  REQUIRE(first.events.size() == 1);
  CHECK(first.events[0].event == "acquired");
  CHECK(first.events[0].token == t);
  auto b = open_test_backend(); // A stops renewing (a killed holder)
  uint64_t tb = acquire_when_free(*b, m, "B").observed.lease.fencing_token;
  CHECK(counters(*a, m) == std::pair<int64_t, int64_t>{2, 1});
  REQUIRE(a->record_lost(m, "A", LostLease{t, "taken", "B", 143, 500}, k_timeout).ok());
  CHECK(counters(*a, m) == std::pair<int64_t, int64_t>{2, 1});
  REQUIRE(require_ok(b->force_release(m, tb, k_timeout)).changed);
  CHECK(counters(*a, m) == std::pair<int64_t, int64_t>{2, 2});
  REQUIRE(b->record_lost(m, "B", LostLease{tb, "revoked", "", 143, 10}, k_timeout).ok());
  CHECK(counters(*a, m) == std::pair<int64_t, int64_t>{2, 2});
  simba::backend::History h = a->history(m, 0, k_timeout);
  REQUIRE_MESSAGE(h.ok, h.error);
  std::vector<std::string> names;
  for (const HistoryEvent& e : h.events) names.push_back(e.event + " " + e.owner_id);
  CHECK(names == std::vector<std::string>{"acquired A", "expired A", "acquired B", "lost A",
                                          "forced B", "lost B"});
  CHECK(h.events[1].token == t);
  REQUIRE(h.events[1].held_ms);
  CHECK(*h.events[1].held_ms >= 500);
}

// The owner's release writes its event in the transaction that deletes its
// key, compared on the record as the acquisition left it (history.cpp): an
// event another process wrote in between makes it look again, so neither
// event takes the other's place in the ring.
TEST_CASE("etcd history: a waiter's acquisition is written once, when it takes the mutex") {
  if (!backend_is_etcd()) return;
  auto a = open_test_backend();
  auto b = open_test_backend();
  auto m = unique_mutex("etcd-history-waiter");
  uint64_t t = require_ok(a->acquire(m, "A", 10000, 2000, k_timeout)).observed.lease.fencing_token;
  CHECK_FALSE(require_ok(b->acquire(m, "B", 10000, 2000, k_timeout)).changed); // queued
  CHECK_FALSE(require_ok(b->acquire(m, "B", 10000, 2000, k_timeout)).changed); // a look
  CHECK(counters(*a, m) == std::pair<int64_t, int64_t>{1, 0});
  REQUIRE(require_ok(a->release(m, "A", t, k_timeout)).changed);
  REQUIRE(require_ok(b->acquire(m, "B", 10000, 2000, k_timeout)).changed);
  CHECK(counters(*a, m) == std::pair<int64_t, int64_t>{2, 0});
  simba::backend::History h = a->history(m, 0, k_timeout);
  REQUIRE_MESSAGE(h.ok, h.error);
  std::vector<std::string> names;
  for (const HistoryEvent& e : h.events) names.push_back(e.event + " " + e.owner_id);
  CHECK(names == std::vector<std::string>{"acquired A", "released A", "acquired B"});
}

TEST_CASE("etcd history: an event written by another process between an acquisition and its "
          "release keeps its place") {
  if (!backend_is_etcd()) return;
  auto a = open_test_backend();
  auto b = open_test_backend();
  auto m = unique_mutex("etcd-history-between");
  uint64_t t = require_ok(a->acquire(m, "A", 10000, 2000, k_timeout)).observed.lease.fencing_token;
  REQUIRE(b->record_skipped(m, "B", simba::backend::SkippedRun{"busy", "A", t, {}, 5, {}},
                            k_timeout).ok());
  REQUIRE(require_ok(a->release(m, "A", t, k_timeout)).changed);
  simba::backend::History h = a->history(m, 0, k_timeout);
  REQUIRE_MESSAGE(h.ok, h.error);
  std::vector<std::string> names;
  for (const HistoryEvent& e : h.events) names.push_back(e.event + " " + e.owner_id);
  CHECK(names == std::vector<std::string>{"acquired A", "skipped B", "released A"});
  CHECK(counters(*a, m) == std::pair<int64_t, int64_t>{1, 0});
  CHECK_FALSE(require_ok(a->get(m, k_timeout)).observed.lease.fencing_token); // free: no key
}

// A holder killed before any other write of the mutex leaves its
// acquisition's event waiting for its number, and its key goes with its
// lease: the next owner, queued on a free mutex, numbers it and writes its
// expiry before its own acquisition.
TEST_CASE("etcd history: a killed holder's waiting event is numbered before its expiry and the "
          "next acquisition") {
  if (!backend_is_etcd()) return;
  auto m = unique_mutex("etcd-history-killed");
  {
    auto a = open_test_backend();
    REQUIRE(require_ok(a->acquire(m, "A", 300, 200, k_timeout)).changed);
  } // killed: its lease runs out
  auto b = open_test_backend();
  for (int64_t until = mono_ms() + 6000; mono_ms() < until; sleep_ms(100))
    if (!require_ok(b->get(m, k_timeout)).observed.lease.fencing_token) break; // no key
  REQUIRE(require_ok(b->acquire(m, "B", 10000, 2000, k_timeout)).changed);
  simba::backend::History h = b->history(m, 0, k_timeout);
  REQUIRE_MESSAGE(h.ok, h.error);
  std::vector<std::string> names;
  for (const HistoryEvent& e : h.events) names.push_back(e.event + " " + e.owner_id);
  CHECK(names == std::vector<std::string>{"acquired A", "expired A", "acquired B"});
  CHECK(counters(*b, m) == std::pair<int64_t, int64_t>{2, 1});
}

// A waiter at the head whose key a forced release rewrote (revoked before
// it took the mutex) does not take it, and writes no acquisition.
TEST_CASE("etcd history: a waiter whose place was revoked writes no acquisition") {
  if (!backend_is_etcd()) return;
  auto a = open_test_backend();
  auto b = open_test_backend();
  auto admin = open_test_backend();
  auto m = unique_mutex("etcd-history-revoked-waiter");
  uint64_t t = require_ok(a->acquire(m, "A", 10000, 2000, k_timeout)).observed.lease.fencing_token;
  CHECK_FALSE(require_ok(b->acquire(m, "B", 10000, 2000, k_timeout)).changed); // queued
  REQUIRE(require_ok(a->release(m, "A", t, k_timeout)).changed);
  REQUIRE(require_ok(admin->force_release(m, 0, k_timeout)).changed); // B's key, at the head
  CHECK_FALSE(require_ok(b->acquire(m, "B", 10000, 2000, k_timeout)).changed);
  CHECK(counters(*a, m).first == 1);
  simba::backend::History h = a->history(m, 0, k_timeout);
  REQUIRE_MESSAGE(h.ok, h.error);
  for (const HistoryEvent& e : h.events) CHECK(e.owner_id != "B");
}
