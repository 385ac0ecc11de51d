// Conformance for --slots N (Backend::acquire_slot, core/slots.hpp): at
// most N valid leases, tokens increasing across slots, each slot guarded
// and released on its own, the marker that records N and keeps plain
// contenders out. Every backend has slots (has_slots()): one that says it
// has none fails here rather than skip them.
#include "support.hpp"

#include "core/slots.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <set>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vector>

using simba::backend::Backend;
using simba::backend::Reply;
using simba::core::Lease;
using simba::core::slot_row;
using namespace simba::test;

namespace {

Reply take(Backend& b, const std::string& m, const std::string& who, int slots = 3,
           int64_t ttl = 10000) {
  return require_ok(b.acquire_slot(m, who, slots, ttl, 2000, k_timeout));
}

int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Lease row(Backend& b, const std::string& m, int slot) {
  return require_ok(b.get(slot_row(m, slot), k_timeout)).observed.lease;
}

} // namespace

TEST_CASE("slots: N holders at most, each on its own slot, tokens increasing across slots") {
  auto b = open_test_backend();
  REQUIRE(b->has_slots());
  auto m = unique_mutex("slots-n");
  std::set<int> slots;
  uint64_t last = 0;
  for (const char* who : {"A", "B", "C"}) {
    Reply r = take(*b, m, who);
    REQUIRE(r.changed);
    CHECK(r.observed.lease.owner_id == who);
    slots.insert(r.observed.lease.slot);
    CHECK(r.observed.lease.fencing_token > last);
    last = r.observed.lease.fencing_token;
    CHECK(row(*b, m, r.observed.lease.slot).owner_id == who);
  }
  CHECK(slots == std::set<int>{0, 1, 2});
  for (const char* who : {"D", "E"}) {
    Reply r = take(*b, m, who);
    CHECK_FALSE(r.changed);
    CHECK(r.observed.lease.owner_id != who);
    CHECK(r.observed.lease.valid_at(r.observed.now));
  }
  // A renewal keeps its slot and token.
  Reply again = take(*b, m, "B");
  CHECK(again.changed);
  CHECK(again.observed.lease.slot == 1);
  CHECK(again.observed.lease.fencing_token == row(*b, m, 1).fencing_token);
  // The marker records N and lasts as long as the last slot.
  Lease marker = require_ok(b->get(m, k_timeout)).observed.lease;
  CHECK(marker.owner_id == simba::core::slot_marker(3));
  for (int k = 0; k < 3; ++k) CHECK(marker.transition_at >= row(*b, m, k).transition_at);
}

TEST_CASE("slots: a guard, hold or release of one slot never touches another") {
  auto b = open_test_backend();
  REQUIRE(b->has_slots());
  auto m = unique_mutex("slots-own");
  Reply a = take(*b, m, "A"), c = take(*b, m, "B");
  REQUIRE(a.observed.lease.slot == 0);
  REQUIRE(c.observed.lease.slot == 1);
  Lease b_before = row(*b, m, 1);
  Reply g = require_ok(
      b->guard(slot_row(m, 0), "A", a.observed.lease.fencing_token, 30000, 2000, k_timeout));
  CHECK(g.changed);
  Lease b_after = row(*b, m, 1);
  CHECK(b_after.ttl_at == b_before.ttl_at);
  CHECK(b_after.fencing_token == b_before.fencing_token);
  // The marker follows the longest slot.
  CHECK(require_ok(b->get(m, k_timeout)).observed.lease.transition_at ==
        g.observed.lease.transition_at);
  // A's token on B's slot: nothing.
  CHECK_FALSE(require_ok(b->guard(slot_row(m, 1), "A", a.observed.lease.fencing_token, 30000, 2000,
                                  k_timeout))
                  .changed);
  // A release frees exactly its slot; the next taker gets it, above every token.
  Reply rel =
      require_ok(b->release(slot_row(m, 0), "A", a.observed.lease.fencing_token, k_timeout));
  CHECK(rel.changed);
  CHECK(row(*b, m, 0).free_at(rel.observed.now));
  CHECK(row(*b, m, 1).owned_by("B", rel.observed.now));
  Reply d = take(*b, m, "D");
  REQUIRE(d.changed);
  CHECK(d.observed.lease.slot == 0);
  CHECK(d.observed.lease.fencing_token > c.observed.lease.fencing_token);
  // The marker shrinks back over the slots left: B's and D's.
  Lease marker = require_ok(b->get(m, k_timeout)).observed.lease;
  CHECK(marker.transition_at == std::max(row(*b, m, 0).transition_at, row(*b, m, 1).transition_at));
  // A forced release of one slot revokes only that one.
  Reply f = require_ok(b->force_release(slot_row(m, 1), 0, k_timeout));
  CHECK(f.changed);
  CHECK(row(*b, m, 0).owned_by("D", f.observed.now));
  CHECK(row(*b, m, 1).owner_id.empty());
}

TEST_CASE("slots: another N is refused while the mutex is held; the next N wins once free") {
  auto b = open_test_backend();
  REQUIRE(b->has_slots());
  auto m = unique_mutex("slots-n-mismatch");
  Reply a = take(*b, m, "A", 3);
  REQUIRE(a.changed);
  Reply two = require_ok(b->acquire_slot(m, "B", 2, 10000, 2000, k_timeout));
  CHECK_FALSE(two.changed);
  CHECK(two.slots_recorded == 3);
  CHECK(row(*b, m, 1).free_at(two.observed.now)); // nothing taken
  // A plain contender (N = 1) waits behind the marker.
  Reply plain = require_ok(b->acquire(m, "P", 10000, 2000, k_timeout));
  CHECK_FALSE(plain.changed);
  CHECK(simba::core::slots_of_owner(plain.observed.lease.owner_id) == 3);
  // Free again: the next acquirer's N is recorded.
  REQUIRE(require_ok(b->release(slot_row(m, 0), "A", a.observed.lease.fencing_token, k_timeout))
              .changed);
  Reply now_two = take(*b, m, "B", 2);
  CHECK(now_two.changed);
  CHECK(now_two.observed.lease.fencing_token > a.observed.lease.fencing_token);
  CHECK(require_ok(b->get(m, k_timeout)).observed.lease.owner_id == simba::core::slot_marker(2));
  // A mutex held by a plain contender refuses any N above 1, naming 1.
  auto p = unique_mutex("slots-plain");
  REQUIRE(require_ok(b->acquire(p, "P", 10000, 2000, k_timeout)).changed);
  Reply s = require_ok(b->acquire_slot(p, "S", 3, 10000, 2000, k_timeout));
  CHECK_FALSE(s.changed);
  CHECK(s.slots_recorded == 1);
}

TEST_CASE("slots: an expired slot is taken again; the marker frees with the last slot") {
  auto b = open_test_backend();
  REQUIRE(b->has_slots());
  auto m = unique_mutex("slots-expiry");
  // Leases of 600 ms: long enough that C comes while both are valid on a
  // busy machine (200 ms were not, under load), short enough to wait out.
  Reply a = require_ok(b->acquire_slot(m, "A", 2, 400, 200, k_timeout));
  Reply c = require_ok(b->acquire_slot(m, "B", 2, 400, 200, k_timeout));
  REQUIRE(a.changed);
  REQUIRE(c.changed);
  CHECK_FALSE(require_ok(b->acquire_slot(m, "C", 2, 400, 200, k_timeout)).changed);
  sleep_ms(700);
  Reply g = require_ok(b->get(m, k_timeout));
  CHECK(g.observed.lease.free_at(g.observed.now));
  // An expired slot is taken again (the other still expired too).
  Reply d = require_ok(b->acquire_slot(m, "D", 2, 400, 200, k_timeout));
  CHECK(d.changed);
  CHECK(d.observed.lease.fencing_token > c.observed.lease.fencing_token);
  sleep_ms(700);
  // Free: a plain contender may take it (no slots held).
  Reply plain = require_ok(b->acquire(m, "P", 10000, 2000, k_timeout));
  CHECK(plain.changed);
  CHECK(plain.observed.lease.fencing_token > c.observed.lease.fencing_token);
}

// A slot in its transition still has a holder whose CMD may run (its
// simba stopped, or slow to see the loss): the marker must cover it as
// long as a valid lease, not just to its ttl_at -- also when another
// slot's release moves the marker. Otherwise a plain contender (or
// another N) finds the marker free and starts beside that CMD.
TEST_CASE("slots: the marker covers a slot through its transition, after another slot's "
          "release") {
  auto b = open_test_backend();
  REQUIRE(b->has_slots());
  auto m = unique_mutex("slots-transition");
  Reply a = require_ok(b->acquire_slot(m, "A", 2, 300, 8000, k_timeout)); // silent from now on
  Reply c = require_ok(b->acquire_slot(m, "B", 2, 10000, 2000, k_timeout));
  REQUIRE(a.changed);
  REQUIRE(c.changed);
  const Lease& held = a.observed.lease;
  // Until A's slot is in its transition, on the backend's clock.
  Reply seen;
  for (int64_t until = mono_ms() + 5000;; sleep_ms(20)) {
    seen = require_ok(b->get(slot_row(m, held.slot), k_timeout));
    if (seen.observed.now >= held.ttl_at) break;
    REQUIRE_MESSAGE(mono_ms() < until, "A's slot never reached its transition");
  }
  REQUIRE(simba::core::window_at(seen.observed.lease, seen.observed.now) ==
          simba::core::Window::transition);
  Reply rel = require_ok(
      b->release(slot_row(m, c.observed.lease.slot), "B", c.observed.lease.fencing_token, k_timeout));
  REQUIRE(rel.changed);
  // A plain contender and another N are still refused: the marker holds.
  Reply plain = require_ok(b->acquire(m, "P", 10000, 2000, k_timeout));
  CHECK_FALSE(plain.changed);
  Reply three = require_ok(b->acquire_slot(m, "Q", 3, 10000, 2000, k_timeout));
  CHECK_FALSE(three.changed);
  CHECK(three.slots_recorded == 2);
  Reply marker = require_ok(b->get(m, k_timeout));
  CHECK(marker.observed.lease.owner_id == simba::core::slot_marker(2));
  CHECK(marker.observed.lease.transition_at >= held.transition_at);
  CHECK(simba::core::window_at(marker.observed.lease, marker.observed.now) !=
        simba::core::Window::idle);
  // All of it happened within A's transition (else it proves nothing).
  REQUIRE(marker.observed.now < held.transition_at);
}

// The contention is certain by construction, not left to the machine's
// speed: a holder keeps its slot until three slots have been held at once
// (in the counter the children share), so the slots fill up while the
// others keep trying, whatever the scheduling. The check is the spans, as
// each child measured them inside its lease.
TEST_CASE("slots: processes contending on 3 slots never hold more than 3 at once") {
  auto b = open_test_backend();
  REQUIRE(b->has_slots());
  auto m = unique_mutex("slots-procs");
  struct Shared {
    std::atomic<int> held{0}, most{0};
  };
  void* page = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                    -1, 0);
  REQUIRE(page != MAP_FAILED);
  auto* shared = new (page) Shared;
  // Each child writes the span of each hold, measured inside the lease
  // (after acquire's reply, before release is sent), as "start end\n".
  char path[] = "/tmp/simba-slots-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < 6; ++i) {
    std::fflush(nullptr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      auto own = simba::test::open_test_backend();
      std::string me = "P" + std::to_string(i);
      // 1.5 s of contention, and at least until three slots were held at
      // once; 60 s at most (then the count below fails the test).
      int64_t end = mono_ms() + 1500, give_up = mono_ms() + 60000;
      while ((mono_ms() < end || shared->most < 3) && mono_ms() < give_up) {
        Reply r = own->acquire_slot(m, me, 3, 120000, 1000, k_timeout);
        if (!r.ok() || !r.changed) continue;
        int64_t from = mono_ns();
        int now_held = ++shared->held;
        for (int most = shared->most; most < now_held;)
          shared->most.compare_exchange_weak(most, now_held);
        while (shared->most < 3 && mono_ms() < give_up) sleep_ms(1);
        sleep_ms(3);
        --shared->held;
        std::string line = std::to_string(from) + " " + std::to_string(mono_ns()) + "\n";
        if (write(fd, line.data(), line.size()) < 0) _exit(1);
        own->release(slot_row(m, r.observed.lease.slot), me, r.observed.lease.fencing_token,
                     k_timeout);
      }
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
    CHECK(status == 0);
  }
  int counted_most = shared->most;
  munmap(page, sizeof(Shared));
  std::vector<std::pair<int64_t, int>> edges; // +1 at a start, -1 at an end
  FILE* f = fopen(path, "r");
  long long from = 0, to = 0;
  while (f && fscanf(f, "%lld %lld", &from, &to) == 2) {
    edges.push_back({from, 1});
    edges.push_back({to, -1});
  }
  if (f) fclose(f);
  close(fd);
  unlink(path);
  std::sort(edges.begin(), edges.end()); // an end before a start at one instant
  int held = 0, most = 0;
  for (auto& e : edges) most = std::max(most, held += e.second);
  CHECK(edges.size() >= 6);
  CHECK(counted_most <= 3);
  CHECK(most <= 3);
  // Three at once did happen (by construction): the bound was tested.
  CHECK(counted_most == 3);
  CHECK(most == 3);
}

namespace {

// Releases a slot from another process, as another simba would (a
// backend's release wakes nobody of its own process).
void release_elsewhere(const std::string& m, const Reply& held, const std::string& who) {
  int status = run_in_child([&] {
    auto other = open_test_backend();
    return other
        ->release(slot_row(m, held.observed.lease.slot), who, held.observed.lease.fencing_token,
                  k_timeout)
        .changed;
  });
  REQUIRE(status == 0);
}

} // namespace

// "wake-up:": skipped where there are none (PostgreSQL with listen=off,
// through PgBouncer: no queue either, waiters poll).
TEST_CASE("wake-up: slots: a freed slot goes to the waiter queued first, never to a latecomer; the "
          "timed fallback lets anyone in when the woken waiter does not come") {
  auto b = open_test_backend();
  REQUIRE(b->has_slots());
  auto m = unique_mutex("slots-fifo");
  Reply a = take(*b, m, "A", 2), c = take(*b, m, "B", 2);
  REQUIRE(a.changed);
  REQUIRE(c.changed);
  // Two waiters queue, W1 first.
  auto w1 = open_test_backend(), w2 = open_test_backend();
  REQUIRE_FALSE(take(*w1, m, "W1", 2).changed);
  int fd1 = w1->wakeups(m, "W1").wait();
  REQUIRE(fd1 >= 0);
  REQUIRE_FALSE(take(*w2, m, "W2", 2).changed);
  int fd2 = w2->wakeups(m, "W2").wait();
  REQUIRE(fd2 >= 0);
  // A's release wakes W1 alone.
  release_elsewhere(m, a, "A");
  CHECK(wait_for_wakeup(w1->wakeups(m, "W1"), fd1, 1000));
  CHECK_FALSE(wait_for_wakeup(w2->wakeups(m, "W2"), fd2, 300));
  // A latecomer, and W2 behind W1, are refused the free slot: no barging.
  // They are shown a lease that is not free (they sleep, they do not spin).
  auto late = open_test_backend();
  for (auto [who, backend] : {std::pair{"L", late.get()}, std::pair{"W2", w2.get()}}) {
    Reply r = take(*backend, m, who, 2);
    CHECK_FALSE(r.changed);
    CHECK_FALSE(r.observed.lease.free_at(r.observed.now));
    CHECK(r.observed.lease.transition_at <= r.observed.now + simba::core::k_slot_fallback_ms + 100);
  }
  // W1, first in line, takes it.
  Reply got1 = take(*w1, m, "W1", 2);
  CHECK(got1.changed);
  CHECK(got1.observed.lease.slot == a.observed.lease.slot);
  // B's release wakes W2 (W1 left the queue with its slot); W2 does not
  // come (stopped, say): a latecomer is refused until the slot has been
  // free for the fallback, then takes it.
  release_elsewhere(m, c, "B");
  CHECK(wait_for_wakeup(w2->wakeups(m, "W2"), fd2, 1000));
  Reply refused = take(*late, m, "L", 2);
  REQUIRE_FALSE(refused.changed);
  sleep_ms(refused.observed.lease.transition_at - refused.observed.now + 50);
  Reply got = take(*late, m, "L", 2);
  CHECK(got.changed);
  CHECK(got.observed.lease.slot == c.observed.lease.slot);
  CHECK(got.observed.lease.fencing_token > got1.observed.lease.fencing_token);
}

// Two releases before the first woken waiter has come: the second wakes
// the next waiter (the first is taking the first slot), and nobody more.
TEST_CASE("wake-up: slots: two slots freed one after the other wake the first two waiters, one "
          "each") {
  auto b = open_test_backend();
  REQUIRE(b->has_slots());
  auto m = unique_mutex("slots-two-wakes");
  Reply a = take(*b, m, "A", 2), c = take(*b, m, "B", 2);
  REQUIRE(a.changed);
  REQUIRE(c.changed);
  auto w1 = open_test_backend(), w2 = open_test_backend(), w3 = open_test_backend();
  std::pair<const char*, Backend*> waiters[] = {
      {"W1", w1.get()}, {"W2", w2.get()}, {"W3", w3.get()}};
  int fd[3];
  for (int i = 0; i < 3; ++i) {
    REQUIRE_FALSE(take(*waiters[i].second, m, waiters[i].first, 2).changed);
    fd[i] = waiters[i].second->wakeups(m, waiters[i].first).wait();
    REQUIRE(fd[i] >= 0);
  }
  // They queued a moment before (SQLite tells a woken waiter by its file's
  // mtime, which must be later than its joining by more than the coarse
  // clock's step).
  sleep_ms(100);
  release_elsewhere(m, a, "A");
  release_elsewhere(m, c, "B");
  CHECK(wait_for_wakeup(w1->wakeups(m, "W1"), fd[0], 1000));
  CHECK(wait_for_wakeup(w2->wakeups(m, "W2"), fd[1], 1000));
  CHECK_FALSE(wait_for_wakeup(w3->wakeups(m, "W3"), fd[2], 300));
  // The two woken take the two slots; the third is refused.
  CHECK(take(*w1, m, "W1", 2).changed);
  CHECK(take(*w2, m, "W2", 2).changed);
  CHECK_FALSE(take(*w3, m, "W3", 2).changed);
}
