// The MySQL backend's own cases (run by conformance/mysql only): the
// owner-or-expired acquire is one atomic step even when many processes
// send it at the same instant, on a new mutex and on one whose lease ran
// out (README.md in src/backend/mysql: the row's lock orders the queries);
// an acquire of a mutex another holds does not wait for that lock (its
// look), and decides on the row as its touch found it, not as the look
// read it; the hint channel; the server-run quarantine on every path.
#include "support.hpp"

#include "backend/backend.hpp"
#include "backend/mysql/connection.hpp"
#include "backend/mysql/packets.hpp"
#include "backend/uri.hpp"
#include "core/once_per.hpp"
#include "sys/clock.hpp"

#include <csignal>
#include <set>
#include <vector>

using namespace simba::test;
using simba::backend::Reply;

namespace {

constexpr int k_racers = 8;
constexpr int k_rounds = 12;

// Each racer, released at once by `go`, acquires mutex base/r for every
// round r; what each got goes to `out`: "round won token\n".
void race(int racer, const std::string& base, int go, int out) {
  auto b = open_test_backend();
  char c;
  if (read(go, &c, 1) != 1) _exit(3);
  std::string me = "racer-" + std::to_string(racer);
  for (int r = 0; r < k_rounds; ++r) {
    Reply got = b->acquire(base + "/" + std::to_string(r), me, 5000, 500, k_timeout);
    if (!got.ok()) {
      std::fprintf(stderr, "racer %d: %s\n", racer, got.error.c_str());
      _exit(2);
    }
    bool won = got.changed && got.observed.lease.owner_id == me;
    std::string line = std::to_string(r) + " " + (won ? "1 " : "0 ") +
                       std::to_string(got.observed.lease.fencing_token) + "\n";
    if (write(out, line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(4);
  }
  _exit(0);
}

// Starts the racers at one instant; every round exactly one wins and all
// see its token.
void check_race(const std::string& base) {
  int go[2], out[2];
  REQUIRE(pipe(go) == 0);
  REQUIRE(pipe(out) == 0);
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  for (int i = 0; i < k_racers; ++i) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(go[1]);
      close(out[0]);
      race(i, base, go[0], out[1]);
    }
    pids.push_back(pid);
  }
  close(go[0]);
  close(out[1]);
  sleep_ms(300); // every racer connected
  std::string all(k_racers, 'g');
  REQUIRE(write(go[1], all.data(), all.size()) == k_racers);
  close(go[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, n);
  close(out[0]);
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  std::vector<int> winners(k_rounds, 0);
  std::vector<std::set<std::string>> tokens(k_rounds);
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    int r = 0, won = 0;
    char token[32] = {};
    REQUIRE(std::sscanf(text.substr(at, end - at).c_str(), "%d %d %31s", &r, &won, token) == 3);
    winners[r] += won;
    tokens[r].insert(token);
    at = end + 1;
  }
  for (int r = 0; r < k_rounds; ++r) {
    CHECK_MESSAGE(winners[r] == 1, "round " << r << ": " << winners[r] << " winners");
    CHECK_MESSAGE(tokens[r].size() == 1, "round " << r << ": the racers saw different tokens");
  }
}

} // namespace

TEST_CASE("mysql race: processes acquiring a new mutex at once: exactly one gets it") {
  check_race(unique_mutex("race-new"));
}

TEST_CASE("mysql race: processes taking over an expired lease at once: exactly one gets it") {
  auto base = unique_mutex("race-expired");
  auto b = open_test_backend();
  for (int r = 0; r < k_rounds; ++r)
    require_ok(b->acquire(base + "/" + std::to_string(r), "gone", 50, 0, k_timeout));
  sleep_ms(100); // every one of them ran out
  check_race(base);
}

TEST_CASE("mysql hint: the holder's release wakes the waiter at once; a release that changes "
          "nothing, or of another mutex, wakes nobody") {
  auto owner = open_test_backend();
  auto m = unique_mutex("hint");
  auto other = unique_mutex("hint-other");
  require_ok(owner->acquire(m, "A", 10000, 1000, k_timeout));
  require_ok(owner->acquire(other, "A", 10000, 1000, k_timeout));
  auto waiter = open_test_backend();
  simba::backend::Wakeups& wake = waiter->wakeups(m, "W");
  int fd = wake.wait();
  REQUIRE(fd >= 0);
  CHECK_FALSE(wait_for_wakeup(wake, fd, 100));
  require_ok(owner->release(other, "A", 0, k_timeout));
  CHECK_FALSE(wait_for_wakeup(wake, fd, 100));
  CHECK_FALSE(require_ok(owner->release(m, "B", 0, k_timeout)).changed);
  CHECK_FALSE(wait_for_wakeup(wake, fd, 100));
  int64_t t0 = mono_ms();
  CHECK(require_ok(owner->release(m, "A", 0, k_timeout)).changed);
  REQUIRE(wait_for_wakeup(wake, fd, 1000));
  MESSAGE("woken " << mono_ms() - t0 << " ms after the release");
  Reply got = require_ok(waiter->acquire(m, "W", 10000, 1000, k_timeout));
  CHECK(got.observed.lease.owner_id == "W");
  // The woken waiter holds the hint now; its own release passes it on.
  auto next = open_test_backend();
  simba::backend::Wakeups& wake2 = next->wakeups(m, "X");
  int fd2 = wake2.wait();
  REQUIRE(fd2 >= 0);
  waiter->wakeups(m, "W").own();
  CHECK_FALSE(wait_for_wakeup(wake2, fd2, 100));
  CHECK(require_ok(waiter->release(m, "W", 0, k_timeout)).changed);
  CHECK(wait_for_wakeup(wake2, fd2, 1000));
}

TEST_CASE("mysql hint: a holder that dies lets its waiter look at once") {
  auto m = unique_mutex("hint-dies");
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  std::fflush(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto b = open_test_backend();
    bool ok = b->acquire(m, "dying", 300, 200, k_timeout).changed;
    char c = ok ? 'y' : 'n';
    if (write(ready[1], &c, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  char c = 0;
  REQUIRE(read(ready[0], &c, 1) == 1);
  REQUIRE(c == 'y');
  auto waiter = open_test_backend();
  simba::backend::Wakeups& wake = waiter->wakeups(m, "W");
  int fd = wake.wait();
  REQUIRE(fd >= 0);
  CHECK_FALSE(wait_for_wakeup(wake, fd, 100));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  CHECK(wait_for_wakeup(wake, fd, 1000)); // a look: the lease itself runs out at its time
  close(ready[0]);
  close(ready[1]);
}

// statements.cpp, Statements::look: a newcomer that finds the lease valid
// and another's answers from a plain read, without the row's lock, which
// a session in the middle of a write holds here (as an owner's guard or a
// woken waiter's acquire would). Without the look it waits for the lock
// (innodb_lock_wait_timeout, the call's budget) and fails.
TEST_CASE("mysql look: an acquire of a mutex another holds answers at once, without the row's "
          "lock; the owner's renewal waits for it") {
  auto owner = open_test_backend();
  auto m = unique_mutex("look");
  Reply held = require_ok(owner->acquire(m, "A", 10000, 1000, k_timeout));
  REQUIRE(held.changed);
  auto uri = std::get<simba::backend::MysqlUri>(simba::backend::parse_backend_uri(backend_uri()));
  simba::backend::mysql::Connection raw;
  REQUIRE(raw.connect(uri, simba::sys::boottime_ms() + 5000).empty());
  const std::string row = "SELECT 1 FROM `" + uri.prefix + "leases` WHERE mutex = " +
                          simba::backend::mysql::wire::hex_literal(m) + " FOR UPDATE";
  REQUIRE(raw.query("START TRANSACTION;" + row, simba::sys::boottime_ms() + 5000).ok);
  auto b = open_test_backend();
  int64_t t0 = mono_ms();
  Reply r = b->acquire(m, "B", 10000, 1000, 3000);
  const int64_t took = mono_ms() - t0;
  REQUIRE(r.ok());
  CHECK_FALSE(r.changed);
  CHECK(r.observed.lease.owner_id == "A");
  CHECK(r.observed.lease.fencing_token == held.observed.lease.fencing_token);
  CHECK(r.observed.lease.transition_at == held.observed.lease.transition_at);
  CHECK(took < 500);
  MESSAGE("answered in " << took << " ms with the row locked");
  // The owner's renewal writes: it waits for the lock, and gets it.
  std::thread unlock([&] {
    sleep_ms(300);
    raw.query("ROLLBACK", simba::sys::boottime_ms() + 5000);
  });
  t0 = mono_ms();
  Reply renewed = owner->acquire(m, "A", 10000, 1000, 3000);
  unlock.join();
  REQUIRE(renewed.ok());
  CHECK(renewed.changed);
  CHECK(mono_ms() - t0 >= 250);
}

// An acquire decides on the lease row as its touch found it, never on
// what its look read (statements.cpp, Statements::acquire; run by
// conformance/mysql only). The look is a plain read without the row's
// lock: between it and the touch (which waits for the lock) another
// contender may take the lease. Here that lease is written by a
// transaction of the test's own that holds the row's lock over the look,
// its ttl already over and its transition running, as a new owner's is
// when the touch waited longer than its ttl: the acquire must neither take
// it (a new lease only after transition_at) nor renew it as its own (owner
// compared), and its times stay as written.
TEST_CASE("mysql look: a lease taken by another after the look, in its transition, is neither "
          "taken nor renewed by the acquire that waited for the row") {
  auto a = open_test_backend();
  auto m = unique_mutex("stale-look");
  Reply first = require_ok(a->acquire(m, "A", 50, 0, k_timeout));
  REQUIRE(first.changed);
  sleep_ms(100); // A's lease ran out: a look finds the mutex free
  auto uri = std::get<simba::backend::MysqlUri>(simba::backend::parse_backend_uri(backend_uri()));
  simba::backend::mysql::Connection raw;
  REQUIRE(raw.connect(uri, simba::sys::boottime_ms() + 5000).empty());
  const std::string now = "FLOOR(UNIX_TIMESTAMP(SYSDATE(6)) * 1000)";
  // C's lease: its ttl over 100 ms ago, its transition 10 s more.
  REQUIRE(raw.query("START TRANSACTION;UPDATE `" + uri.prefix + "leases` SET owner = 'C', token = "
                    "token + 1, acquired_at = " + now + " - 200, ttl_at = " + now +
                    " - 100, transition_at = " + now + " + 10000, holding = 0 WHERE mutex = " +
                    simba::backend::mysql::wire::hex_literal(m),
                    simba::sys::boottime_ms() + 5000)
              .ok);
  auto b = open_test_backend();
  Reply got;
  std::thread acquirer([&] { got = b->acquire(m, "B", 5000, 5000, 5000); });
  sleep_ms(400); // B looked (the last committed lease: A's, run out) and waits for the row
  REQUIRE(raw.query("COMMIT", simba::sys::boottime_ms() + 5000).ok);
  acquirer.join();
  REQUIRE(got.ok());
  CHECK_FALSE(got.changed);
  CHECK(got.observed.lease.owner_id == "C");
  Reply now_row = require_ok(a->get(m, k_timeout));
  CHECK(now_row.observed.lease.owner_id == "C");
  CHECK(now_row.observed.lease.fencing_token == first.observed.lease.fencing_token + 1);
  // As written (SYSDATE is read once per use: a millisecond apart at most).
  CHECK(now_row.observed.lease.transition_at - now_row.observed.lease.ttl_at >= 10090);
}

// The MySQL backend's server-run quarantine (statements.cpp,
// quarantine_sql and run_check): once the
// server shows a new run (here its "<prefix>run" table emptied, as a
// restart empties that MEMORY table), no new lease is granted by any path
// (a plain acquire, --slots, --once-per) until the longest lease that may
// still run + 1 s has passed, while the owner of a running lease renews
// it. Tables of the case's own (a prefix of its own): the quarantine holds
// for every mutex of its tables, and must not stall the other cases.
namespace {

// The suite's URI with a prefix of this process's own.
std::string quarantine_case_uri() {
  std::string u = backend_uri();
  size_t at = u.find("prefix=");
  REQUIRE(at != std::string::npos); // conformance_mysql.sh sets one
  size_t end = u.find('&', at);
  u.insert(end == std::string::npos ? u.size() : end, "q" + std::to_string(getpid()) + "_");
  return u;
}

} // namespace

TEST_CASE("mysql quarantine: after a new server run no path grants a new lease until the longest "
          "lease + 1 s has passed; the owner renews meanwhile") {
  const std::string uri = quarantine_case_uri();
  auto a = simba::backend::open_backend(uri);
  auto held = unique_mutex("q-held"), plain = unique_mutex("q-plain");
  auto slots = unique_mutex("q-slots"), once = unique_mutex("q-once");
  Reply first = require_ok(a->acquire(held, "A", 1000, 500, k_timeout));
  REQUIRE(first.changed);
  const uint64_t token = first.observed.lease.fencing_token;

  auto parsed = std::get<simba::backend::MysqlUri>(simba::backend::parse_backend_uri(uri));
  simba::backend::mysql::Connection raw;
  REQUIRE(raw.connect(parsed, simba::sys::boottime_ms() + 5000).empty());
  REQUIRE(raw.query("DELETE FROM `" + parsed.prefix + "run`", simba::sys::boottime_ms() + 5000).ok);

  auto b = simba::backend::open_backend(uri);
  const int64_t t0 = mono_ms();
  Reply p = require_ok(b->acquire(plain, "B", 1000, 500, k_timeout));
  CHECK_FALSE(p.changed);
  CHECK(p.observed.lease.owner_id.empty());
  CHECK(p.observed.lease.quarantine);
  Reply s = require_ok(b->acquire_slot(slots, "B", 2, 1000, 500, k_timeout));
  CHECK_FALSE(s.changed);
  simba::core::OncePer o;
  o.period_ms = 86400000;
  Reply w = require_ok(b->acquire_once(once, "B", 1000, 500, o, "q", "h", k_timeout));
  CHECK_FALSE(w.changed);
  // The running lease is its owner's to renew all the same.
  Reply kept = require_ok(a->guard(held, "A", token, 1000, 500, k_timeout));
  CHECK(kept.changed);
  CHECK(kept.observed.lease.fencing_token == token);
  REQUIRE(mono_ms() - t0 < 1500); // the checks above ran inside the quarantine

  // It ends 1500 + 1000 ms after the new run was found: then each path
  // grants.
  Reply later;
  while (mono_ms() - t0 < 6000) {
    later = require_ok(b->acquire(plain, "B", 1000, 500, k_timeout));
    if (later.changed) break;
    sleep_ms(100);
  }
  CHECK(later.changed);
  CHECK(mono_ms() - t0 >= 2000);
  CHECK(require_ok(b->acquire_slot(slots, "B", 2, 1000, 500, k_timeout)).changed);
  CHECK(require_ok(b->acquire_once(once, "B", 1000, 500, o, "q", "h", k_timeout)).changed);
}
