#pragma once
// Helpers shared by the backend conformance tests. Every test works only
// through open_backend(uri) and the Backend interface, so the same cases run
// against every backend (URI from SIMBA_TEST_BACKEND).
#include "backend/open_backend.hpp"
#include "backend/wakeups.hpp"

#include <doctest/doctest.h>

#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace simba::test {

inline std::string backend_uri() {
  const char* u = std::getenv("SIMBA_TEST_BACKEND");
  return u ? u : "";
}

inline bool backend_is_sqlite() { return backend_uri().rfind("sqlite:", 0) == 0; }
inline bool backend_is_postgres() { return backend_uri().rfind("postgres", 0) == 0; }
inline bool backend_is_redis() { return backend_uri().rfind("redis", 0) == 0; }
inline bool backend_is_etcd() { return backend_uri().rfind("etcd", 0) == 0; }
inline bool backend_is_mysql() {
  return backend_uri().rfind("mysql:", 0) == 0 || backend_uri().rfind("mariadb:", 0) == 0;
}

// Two views of one lease agree on every field a backend keeps (the slot is
// the CLI's).
inline bool same_lease(const core::Lease& a, const core::Lease& b) {
  return a.owner_id == b.owner_id && a.acquired_at == b.acquired_at && a.ttl_at == b.ttl_at &&
         a.transition_at == b.transition_at && a.fencing_token == b.fencing_token &&
         a.holding == b.holding && a.quarantine == b.quarantine;
}

// The SQLite database's directory is made here: simba makes only the
// default location's (a typo'd path must not become a lock namespace).
inline std::unique_ptr<backend::Backend> open_test_backend() {
  if (backend_is_sqlite()) {
    std::string path = backend_uri().substr(backend_uri().find(':') + 1);
    if (path.rfind("//", 0) == 0) path = path.substr(2);
    auto slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0) mkdir(path.substr(0, slash).c_str(), 0700);
  }
  return backend::open_backend(backend_uri());
}

// A mutex name no other test case (or earlier run against the same
// database) uses: pid, a counter and a label.
inline std::string unique_mutex(const std::string& label) {
  static int counter = 0;
  static const long long run = static_cast<long long>(time(nullptr));
  return "conf/" + std::to_string(run) + "-" + std::to_string(getpid()) + "-" +
         std::to_string(++counter) + "/" + label;
}

constexpr int64_t k_timeout = 5000;

inline void sleep_ms(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

inline int64_t mono_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

inline backend::Reply require_ok(backend::Reply r) {
  REQUIRE_MESSAGE(r.ok(), "backend error: " << r.error);
  return r;
}

// Waits up to `ms` for a wake-up on `fd` that `w` says is ours; none (false)
// when there was none by then.
inline backend::Wake wait_for_wakeup(backend::Wakeups& w, int fd, int64_t ms) {
  int64_t deadline = mono_ms() + ms;
  for (;;) {
    int64_t left = deadline - mono_ms();
    if (left <= 0) return {};
    pollfd p{fd, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) {
      if (backend::Wake got = w.wake()) return got;
    }
  }
}

// Runs `body` in a forked child (which opens its own backend) and returns
// its exit status: 0 when body returned true.
inline int run_in_child(const std::function<bool()>& body) {
  std::fflush(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    bool ok = false;
    try {
      ok = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The message of the exception of type E that `f` throws; fails otherwise.
template <typename E, typename F> std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("unexpected exception: " << e.what());
  }
  FAIL("no exception");
  return "";
}

// Sets an environment variable for one scope, then restores it.
struct ScopedEnv {
  std::string name;
  bool had;
  std::string old;
  ScopedEnv(const std::string& n, const char* value) : name(n) {
    const char* o = std::getenv(n.c_str());
    had = o != nullptr;
    if (o) old = o;
    if (value)
      setenv(n.c_str(), value, 1);
    else
      unsetenv(n.c_str());
  }
  ~ScopedEnv() {
    if (had)
      setenv(name.c_str(), old.c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};
} // namespace simba::test

// The cases of tests/backend/redis*.cpp run only against Redis: main()
// (conformance.cpp) filters those files out for other backends, and doctest
// counts their cases as skipped. Reached anyway, a case fails: it must never
// pass without running.
#define SKIP_UNLESS_REDIS()                                                                        \
  if (!simba::test::backend_is_redis()) {                                                          \
    FAIL("a redis-only case ran against " << simba::test::backend_uri()                            \
                                          << " (files tests/backend/redis* are filtered out)");    \
  }
