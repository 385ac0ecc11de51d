// The MySQL backend's own cases (run by conformance/mysql only): the
// owner-or-expired acquire is one atomic step even when many processes
// send it at the same instant, on a new mutex and on one whose lease ran
// out (README.md in src/backend/mysql: the row's lock orders the queries).
#include "support.hpp"

#include "backend/backend.hpp"

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
