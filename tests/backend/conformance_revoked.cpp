// Conformance for Backend::end_revoked (issue 31 §4): after release
// --force, the revoked owner stops its CMD in milliseconds and then ends
// the revoked lease, so that the mutex is not blocked for the rest of the
// revoked lease's transition. Only that lease, by its token, and only
// while it is revoked: a valid lease, another token, 0 and a lease already
// free are left as they are.
#include "support.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
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

namespace {

// W, a waiter in a process of its own (as simba is; SQLite never wakes its
// own process's waiter): queued behind the mutex's valid lease, it tries
// again only when woken (every 100 ms without a channel: PgBouncer), until
// it holds the mutex (exit 0) or 10 s pass (exit 1). `queued` says when
// it waits.
pid_t waiter_process(const std::string& m, int queued) {
  std::fflush(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid > 0) return pid;
  int code = 1;
  try {
    auto w = open_test_backend();
    simba::backend::Wakeups& wake = w->wakeups(m, "W");
    Reply first = w->acquire(m, "W", 10000, 10000, k_timeout);
    int fd = first.ok() && !first.changed ? wake.wait() : -2;
    ssize_t ignored = write(queued, "q", 1);
    (void)ignored;
    for (int64_t end = mono_ms() + 10000; fd > -2 && mono_ms() < end;) {
      if (fd >= 0 && !wait_for_wakeup(wake, fd, end - mono_ms())) continue;
      if (fd < 0) sleep_ms(100);
      Reply r = w->acquire(m, "W", 10000, 10000, k_timeout);
      if (r.ok() && r.observed.lease.owned_by("W", r.observed.now)) {
        code = 0;
        break;
      }
      if (fd >= 0) fd = wake.wait();
    }
  } catch (...) {
  }
  _exit(code);
}

} // namespace

// The owner's CMD has exited when release --force (another process)
// revokes its lease; its release then comes: what the core decides on
// (Contender::revoked_after_cmd) is that the release changed nothing and
// shows the owner's own token revoked. Its end_revoked then wakes the
// waiter, as a release does, and the waiter takes the mutex at once, not
// at the revoked lease's transition_at (20 s on).
TEST_CASE("a force between CMD's exit and the owner's release: the release shows the lease "
          "revoked, end_revoked hands it to the waiter at once") {
  auto a = open_test_backend();
  auto m = unique_mutex("revoked-after-cmd");
  Reply got = require_ok(a->acquire(m, "A", 10000, 10000, k_timeout));
  REQUIRE(got.changed);
  uint64_t t = got.observed.lease.fencing_token;
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  pid_t waiter = waiter_process(m, pipe_fds[1]);
  close(pipe_fds[1]);
  char c = 0;
  REQUIRE(read(pipe_fds[0], &c, 1) == 1);
  close(pipe_fds[0]);
  auto waiter_done = [&](int ms) -> std::optional<int> {
    int status = 0;
    for (int64_t end = mono_ms() + ms;; sleep_ms(10)) {
      if (waitpid(waiter, &status, WNOHANG) == waiter)
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (mono_ms() >= end) return std::nullopt;
    }
  };
  int status = run_in_child([&] {
    auto admin = open_test_backend();
    Reply f = admin->force_release(m, 0, k_timeout);
    return f.ok() && f.changed && f.observed.lease.revoked_at(f.observed.now);
  });
  REQUIRE(status == 0);

  Reply rel = require_ok(a->release(m, "A", t, k_timeout));
  CHECK_FALSE(rel.changed);
  CHECK(rel.observed.lease.revoked_at(rel.observed.now));
  CHECK_FALSE(rel.observed.lease.quarantine);
  CHECK(rel.observed.lease.fencing_token == t);
  // What the force and the release woke finds the mutex revoked.
  CHECK_FALSE(waiter_done(500));

  int64_t t0 = mono_ms();
  REQUIRE(require_ok(a->end_revoked(m, "A", t, k_timeout)).changed);
  std::optional<int> done = waiter_done(3000);
  if (!done) kill(waiter, SIGKILL), waitpid(waiter, nullptr, 0);
  REQUIRE_MESSAGE(done, "end_revoked woke no waiter within 3 s");
  CHECK(*done == 0);
  MESSAGE("the waiter held the mutex " << mono_ms() - t0 << " ms after end_revoked");
  Reply now = require_ok(a->get(m, k_timeout));
  CHECK(now.observed.lease.owned_by("W", now.observed.now));
  CHECK(now.observed.lease.fencing_token > t);
  std::vector<std::string> events = event_names(*a, m);
  REQUIRE(events.size() == 3);
  CHECK(events[0] == "acquired");
  CHECK(events[1] == "forced");
  CHECK((events[2] == "acquired" || events[2] == "handed_over"));
}
