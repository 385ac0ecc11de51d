// Conformance for the lost event (Backend::record_lost) and the counters
// (MutexLease::acquisitions, losses): the lost event writes history only,
// whatever lease stands, and each lease that ends other than by its
// owner's release is counted once, by whichever of forced, lost and
// expired comes first.
#include "support.hpp"

#include "core/slots.hpp"

#include <doctest/doctest.h>

using simba::backend::Backend;
using simba::backend::HistoryEvent;
using simba::backend::Holder;
using simba::backend::Listing;
using simba::backend::LostLease;
using simba::backend::MutexLease;
using simba::backend::Reply;
using simba::core::Lease;
using namespace simba::test;

namespace {

LostLease lost(uint64_t token, const char* reason, const char* by = "") {
  return LostLease{token, reason, by, 143, 1234};
}

// The lost event leaves the lease exactly as get() showed it before.
void record_and_compare(Backend& b, const std::string& m, const std::string& who,
                        const LostLease& l) {
  Lease before = require_ok(b.get(m, k_timeout)).observed.lease;
  Reply r = b.record_lost(m, who, l, k_timeout);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK_FALSE(r.changed);
  CHECK(same_lease(r.observed.lease, before));
  CHECK(same_lease(require_ok(b.get(m, k_timeout)).observed.lease, before));
}

// {acquisitions, losses} of `m` as status reads them.
std::pair<int64_t, int64_t> counters(Backend& b, const std::string& m) {
  Listing l = b.inspect(m, k_timeout);
  REQUIRE_MESSAGE(l.ok, l.error);
  REQUIRE(l.mutexes.size() == 1);
  const MutexLease& ml = l.mutexes[0];
  REQUIRE(ml.acquisitions);
  REQUIRE(ml.losses);
  return {*ml.acquisitions, *ml.losses};
}

using Counts = std::pair<int64_t, int64_t>;

} // namespace

TEST_CASE("lost: never changes the lease that stands -- ours, revoked, another's, none") {
  auto b = open_test_backend();
  auto m = unique_mutex("lost-lease");

  // Ours, still valid: neither ended nor renewed; it stays ours.
  Reply a = require_ok(b->acquire(m, "A", 10000, 2000, k_timeout));
  uint64_t ta = a.observed.lease.fencing_token;
  record_and_compare(*b, m, "A", lost(ta, "unrenewed"));
  CHECK_FALSE(require_ok(b->acquire(m, "B", 10000, 2000, k_timeout)).changed);
  CHECK(require_ok(b->guard(m, "A", ta, 10000, 2000, k_timeout)).changed);

  // Revoked: still revoked, free no sooner.
  REQUIRE(require_ok(b->force_release(m, ta, k_timeout)).changed);
  record_and_compare(*b, m, "A", lost(ta, "revoked"));
  Reply seen = require_ok(b->get(m, k_timeout));
  CHECK(seen.observed.lease.revoked_at(seen.observed.now));
  CHECK_FALSE(require_ok(b->acquire(m, "B", 10000, 2000, k_timeout)).changed);

  // Another's lease (ours ran out and was taken): its owner keeps it.
  auto m2 = unique_mutex("lost-taken");
  uint64_t t1 = require_ok(b->acquire(m2, "A", 150, 100, k_timeout)).observed.lease.fencing_token;
  sleep_ms(400);
  Reply taken = require_ok(b->acquire(m2, "B", 10000, 2000, k_timeout));
  REQUIRE(taken.changed);
  record_and_compare(*b, m2, "A", lost(t1, "taken", "B"));
  CHECK(require_ok(b->guard(m2, "B", taken.observed.lease.fencing_token, 10000, 2000, k_timeout))
            .changed);

  // Released since: not resurrected; the next acquisition takes it at once.
  auto m3 = unique_mutex("lost-released");
  uint64_t t3 =
      require_ok(b->acquire(m3, "A", 10000, 2000, k_timeout)).observed.lease.fencing_token;
  REQUIRE(require_ok(b->release(m3, "A", t3, k_timeout)).changed);
  record_and_compare(*b, m3, "A", lost(t3, "gone"));
  Reply next = require_ok(b->acquire(m3, "C", 10000, 2000, k_timeout));
  CHECK(next.changed);
  CHECK(next.observed.lease.fencing_token > t3);

  // A mutex never acquired: no lease made.
  auto m4 = unique_mutex("lost-never");
  Reply r = b->record_lost(m4, "A", lost(77, "gone"), k_timeout);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(r.observed.lease.owner_id.empty());
  CHECK(r.observed.lease.free_at(r.observed.now));
  Reply first = require_ok(b->acquire(m4, "A", 10000, 2000, k_timeout));
  CHECK(first.changed);
}

TEST_CASE("lost: one event in the history, with reason, by whom, the holder, exit code, held "
          "time and the lost lease's token") {
  auto b = open_test_backend();
  b->set_holder(Holder{"run", 4711, "host-l", "deploy.sh"});
  auto m = unique_mutex("lost-event");
  uint64_t t = require_ok(b->acquire(m, "A", 150, 100, k_timeout)).observed.lease.fencing_token;
  sleep_ms(400);
  auto other = open_test_backend();
  REQUIRE(require_ok(other->acquire(m, "B", 10000, 2000, k_timeout)).changed);
  REQUIRE(b->record_lost(m, "A", LostLease{t, "taken", "B", 137, 2500}, k_timeout).ok());
  simba::backend::History h = b->history(m, 0, k_timeout);
  REQUIRE_MESSAGE(h.ok, h.error);
  REQUIRE(h.kept);
  std::vector<HistoryEvent> lost_events;
  for (const HistoryEvent& e : h.events)
    if (e.event == "lost") lost_events.push_back(e);
  REQUIRE(lost_events.size() == 1);
  const HistoryEvent& e = lost_events[0];
  CHECK(e.mutex == m);
  CHECK(e.owner_id == "A");
  CHECK(e.token == t);
  CHECK(e.reason == "taken");
  CHECK(e.by == "B");
  CHECK(e.exit_code == 137);
  CHECK(e.held_ms == 2500);
  CHECK_FALSE(e.waited_ms);
  REQUIRE(e.holder);
  CHECK(e.holder->pid == 4711);
  CHECK(e.holder->host == "host-l");
  CHECK(e.holder->command == "deploy.sh");
  CHECK(e.at > 0);
  // <= the history read's now, give or take the 1 ms by which SQLite's
  // wall time of two calls may differ (each converts its boot-time clock
  // with an offset read anew: clock_gettime twice, rounded to ms).
  CHECK(e.at <= h.now + 1);
  // The events of the mutex in their order: the expiry seen by B's
  // acquisition, B's acquisition, then A's word.
  std::vector<std::string> names;
  for (const HistoryEvent& x : h.events) names.push_back(x.event);
  CHECK(names == std::vector<std::string>{"acquired", "expired", "acquired", "lost"});

  // No CMD ran (lead between runs): no exit code.
  auto m2 = unique_mutex("lost-no-cmd");
  uint64_t t2 =
      require_ok(b->acquire(m2, "A", 10000, 2000, k_timeout)).observed.lease.fencing_token;
  REQUIRE(b->record_lost(m2, "A", LostLease{t2, "revoked", "", std::nullopt, 10}, k_timeout).ok());
  simba::backend::History h2 = b->history(m2, 0, k_timeout);
  REQUIRE(h2.ok);
  REQUIRE(h2.events.size() == 2);
  CHECK(h2.events[1].event == "lost");
  CHECK_FALSE(h2.events[1].exit_code);
  CHECK(h2.events[1].by.empty());
}

TEST_CASE("counters: acquisitions, and each lease that ends without its owner's release counted "
          "once, by its forced, its holder's lost or its expired") {
  auto b = open_test_backend();
  auto m = unique_mutex("counters");
  const int64_t ttl = 150, tr = 100, past = 400; // a short lease, and a wait past its end
  CHECK(counters(*b, m) == Counts{0, 0});

  // Acquire, renew, release: one acquisition, no loss.
  uint64_t t = require_ok(b->acquire(m, "A", ttl, tr, k_timeout)).observed.lease.fencing_token;
  REQUIRE(require_ok(b->guard(m, "A", t, ttl, tr, k_timeout)).changed);
  REQUIRE(require_ok(b->acquire(m, "A", ttl, tr, k_timeout)).changed); // a renewal
  REQUIRE(require_ok(b->release(m, "A", t, k_timeout)).changed);
  CHECK(counters(*b, m) == Counts{1, 0});

  // Forced: a loss; its holder's lost event does not count it again, nor
  // does the next acquisition once the revoked lease is over.
  t = require_ok(b->acquire(m, "B", ttl, tr, k_timeout)).observed.lease.fencing_token;
  REQUIRE(require_ok(b->force_release(m, t, k_timeout)).changed);
  CHECK(counters(*b, m) == Counts{2, 1});
  REQUIRE(b->record_lost(m, "B", lost(t, "revoked"), k_timeout).ok());
  CHECK(counters(*b, m) == Counts{2, 1});
  sleep_ms(past);
  REQUIRE(require_ok(b->acquire(m, "C", ttl, tr, k_timeout)).changed);
  CHECK(counters(*b, m) == Counts{3, 1});

  // Run out, and its holder says so first: one loss, not a second one at
  // the expiry the next acquisition writes.
  t = require_ok(b->get(m, k_timeout)).observed.lease.fencing_token;
  sleep_ms(past);
  REQUIRE(b->record_lost(m, "C", lost(t, "unrenewed"), k_timeout).ok());
  CHECK(counters(*b, m) == Counts{3, 2});
  REQUIRE(require_ok(b->acquire(m, "D", 10000, 2000, k_timeout)).changed);
  CHECK(counters(*b, m) == Counts{4, 2});

  // Still standing when its holder gave it up (a slow backend): a loss;
  // its release after is none, and a forced release would not count again.
  t = require_ok(b->get(m, k_timeout)).observed.lease.fencing_token;
  REQUIRE(b->record_lost(m, "D", lost(t, "unrenewed"), k_timeout).ok());
  CHECK(counters(*b, m) == Counts{4, 3});
  REQUIRE(require_ok(b->release(m, "D", t, k_timeout)).changed);
  CHECK(counters(*b, m) == Counts{4, 3});
  t = require_ok(b->acquire(m, "E", 10000, 2000, k_timeout)).observed.lease.fencing_token;
  REQUIRE(b->record_lost(m, "E", lost(t, "unrenewed"), k_timeout).ok());
  REQUIRE(require_ok(b->force_release(m, t, k_timeout)).changed);
  CHECK(counters(*b, m) == Counts{5, 4});

  // An expiry nobody reported (a holder killed): counted by the next
  // acquisition; a late lost event of that lease counts nothing more.
  auto m2 = unique_mutex("counters-expiry");
  t = require_ok(b->acquire(m2, "F", ttl, tr, k_timeout)).observed.lease.fencing_token;
  sleep_ms(past);
  REQUIRE(require_ok(b->acquire(m2, "G", ttl, tr, k_timeout)).changed);
  CHECK(counters(*b, m2) == Counts{2, 1});
  REQUIRE(b->record_lost(m2, "F", lost(t, "taken", "G"), k_timeout).ok());
  CHECK(counters(*b, m2) == Counts{2, 1});

  // A lease only held (--min-hold, simba acquire's) that runs out: its
  // normal end, no loss.
  t = require_ok(b->get(m2, k_timeout)).observed.lease.fencing_token;
  REQUIRE(require_ok(b->hold(m2, "G", t, ttl, k_timeout)).changed);
  sleep_ms(past);
  REQUIRE(require_ok(b->acquire(m2, "H", ttl, tr, k_timeout)).changed);
  CHECK(counters(*b, m2) == Counts{3, 1});

  // The lease that took over came and went (released: on Redis its hash
  // is gone too) before the late lost event: nothing more either.
  auto m3 = unique_mutex("counters-late");
  t = require_ok(b->acquire(m3, "X", ttl, tr, k_timeout)).observed.lease.fencing_token;
  sleep_ms(past);
  uint64_t ty = require_ok(b->acquire(m3, "Y", ttl, tr, k_timeout)).observed.lease.fencing_token;
  REQUIRE(require_ok(b->release(m3, "Y", ty, k_timeout)).changed);
  CHECK(counters(*b, m3) == Counts{2, 1});
  REQUIRE(b->record_lost(m3, "X", lost(t, "unrenewed"), k_timeout).ok());
  CHECK(counters(*b, m3) == Counts{2, 1});

  // Counters are the mutex's: another process reads the same.
  auto c = open_test_backend();
  CHECK(counters(*c, m2) == Counts{3, 1});
}

TEST_CASE("counters of a mutex with slots are its slots' together") {
  auto b = open_test_backend();
  if (!b->has_slots()) return;
  auto m = unique_mutex("counters-slots");
  Reply s0 = require_ok(b->acquire_slot(m, "A", 2, 10000, 2000, k_timeout));
  Reply s1 = require_ok(b->acquire_slot(m, "B", 2, 10000, 2000, k_timeout));
  REQUIRE(s0.changed);
  REQUIRE(s1.changed);
  REQUIRE(s0.observed.lease.slot != s1.observed.lease.slot);
  CHECK(counters(*b, m) == Counts{2, 0});
  std::string row = simba::core::slot_row(m, s1.observed.lease.slot);
  REQUIRE(require_ok(b->force_release(row, s1.observed.lease.fencing_token, k_timeout)).changed);
  CHECK(counters(*b, m) == Counts{2, 1});
  // The slot's holder reports it: counted once.
  REQUIRE(
      b->record_lost(row, "B", lost(s1.observed.lease.fencing_token, "revoked"), k_timeout).ok());
  CHECK(counters(*b, m) == Counts{2, 1});
  simba::backend::History h = b->history(m, 0, k_timeout);
  REQUIRE(h.ok);
  int lost_events = 0;
  for (const HistoryEvent& e : h.events) lost_events += e.event == "lost" && e.mutex == m;
  CHECK(lost_events == 1);
}
