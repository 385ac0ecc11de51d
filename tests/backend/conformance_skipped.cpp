// Conformance for the skipped event (Backend::record_skipped): a contender
// that did not run writes one "skipped" event with its reason, whom it
// names, the holder's token and times, and nothing else -- the lease, the
// counters and the done record stay as they are; a mutex never leased
// gets nothing.
#include "support.hpp"

#include <doctest/doctest.h>

using simba::backend::HistoryEvent;
using simba::backend::Holder;
using simba::backend::Listing;
using simba::backend::Reply;
using simba::backend::SkippedRun;
using simba::core::Lease;
using namespace simba::test;

namespace {

std::vector<HistoryEvent> skipped_events(simba::backend::Backend& b, const std::string& m) {
  simba::backend::History h = b.history(m, 0, k_timeout);
  REQUIRE_MESSAGE(h.ok, h.error);
  REQUIRE(h.kept);
  std::vector<HistoryEvent> out;
  for (const HistoryEvent& e : h.events)
    if (e.event == "skipped") out.push_back(e);
  return out;
}

} // namespace

TEST_CASE("skipped: one event with reason, holder, token and times; the lease and counters kept") {
  auto b = open_test_backend();
  auto m = unique_mutex("skipped");
  Lease held = require_ok(b->acquire(m, "A", 10000, 2000, k_timeout)).observed.lease;
  Listing before = b->inspect(m, k_timeout);
  REQUIRE_MESSAGE(before.ok, before.error);
  REQUIRE(before.mutexes.size() == 1);

  auto other = open_test_backend();
  other->set_holder(Holder{"run", 4712, "host-s", "backup.sh"});
  Reply r = other->record_skipped(
      m, "B", SkippedRun{"timeout", "A", held.fencing_token, 1500, 3000}, k_timeout);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK_FALSE(r.changed);
  CHECK(r.observed.lease.owner_id == "A");
  CHECK(r.observed.lease.fencing_token == held.fencing_token);

  Lease now = require_ok(b->get(m, k_timeout)).observed.lease;
  CHECK(now.owner_id == "A");
  CHECK(now.fencing_token == held.fencing_token);
  CHECK(now.ttl_at == held.ttl_at);
  Listing after = b->inspect(m, k_timeout);
  REQUIRE_MESSAGE(after.ok, after.error);
  REQUIRE(after.mutexes.size() == 1);
  CHECK(after.mutexes[0].acquisitions == before.mutexes[0].acquisitions);
  CHECK(after.mutexes[0].losses == before.mutexes[0].losses);

  std::vector<HistoryEvent> s = skipped_events(*b, m);
  REQUIRE(s.size() == 1);
  CHECK(s[0].owner_id == "B");
  CHECK(s[0].reason == "timeout");
  CHECK(s[0].by == "A");
  CHECK(s[0].token == held.fencing_token);
  CHECK(s[0].held_ms == 1500);
  CHECK(s[0].waited_ms == 3000);
  CHECK_FALSE(s[0].exit_code);
  REQUIRE(s[0].holder);
  CHECK(s[0].holder->pid == 4712);
  CHECK(s[0].holder->command == "backup.sh");

  // After a release (the row, or the fence, stays): already-ran, with the
  // run's exit code; the mutex is still free to take.
  REQUIRE(require_ok(b->release(m, "A", held.fencing_token, k_timeout)).changed);
  REQUIRE(other
              ->record_skipped(
                  m, "C", SkippedRun{"already-ran", "a-label", held.fencing_token, 60000, 0, 0},
                  k_timeout)
              .ok());
  s = skipped_events(*b, m);
  REQUIRE(s.size() == 2);
  CHECK(s[1].reason == "already-ran");
  CHECK(s[1].by == "a-label");
  CHECK(s[1].exit_code == 0);
  CHECK(require_ok(b->acquire(m, "D", 10000, 2000, k_timeout)).changed);
}

TEST_CASE("skipped: a mutex never leased gets nothing, and no lease") {
  auto b = open_test_backend();
  auto m = unique_mutex("skipped-never");
  Reply r = b->record_skipped(m, "B", SkippedRun{"busy", "", 0, std::nullopt, 0}, k_timeout);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(r.observed.lease.owner_id.empty());
  CHECK(skipped_events(*b, m).empty());
  CHECK(require_ok(b->acquire(m, "A", 10000, 2000, k_timeout)).changed);
}
