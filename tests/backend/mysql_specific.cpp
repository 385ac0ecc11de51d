// The MySQL backend's own cases (run by conformance/mysql only): the
// owner-or-expired acquire is one atomic step even when many processes
// send it at the same instant, on a new mutex and on one whose lease ran
// out (README.md in src/backend/mysql: the row's lock orders the queries);
// an acquire of a mutex another holds does not wait for that lock (its
// look); the hint channel.
#include "support.hpp"

#include "backend/backend.hpp"
#include "backend/mysql/connection.hpp"
#include "backend/mysql/packets.hpp"
#include "backend/uri.hpp"
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
