// Checks that only concern the Redis backend: URI parsing, connection
// failures (exit 69 material), passwords, the key layout, the embedded
// scripts, and what happens when the server restarts without persistence or
// is paused (SIGSTOP) during a call. The cases that need a server start
// their own redis-server on a free loopback port, so that they may restart,
// pause or password-protect it; they run when the suite runs against Redis
// (SIMBA_TEST_BACKEND=redis...) and are skipped otherwise.
#include "own_redis.hpp"
#include "support.hpp"

#include "backend/redis/lua_scripts.hpp"
#include "core/error.hpp"

#include <doctest/doctest.h>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <memory>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <time.h>
#include <unistd.h>
#include <vector>

using simba::backend::Backend;
using simba::backend::open_backend;
using simba::backend::Reply;
using simba::test::k_timeout;
using simba::test::unique_mutex;
using namespace simba::test;

namespace {

// A loopback listener that is not Redis: it never answers (the kernel
// accepts connections into the backlog), or, with `banner`, a thread
// accepts and sends the banner, like an HTTP or SSH server would.
struct FakeServer {
  int fd = -1;
  int port = 0;
  std::thread thread;
  std::atomic<bool> stop{false};
  explicit FakeServer(const char* banner = nullptr) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(fd, 16) == 0);
    socklen_t len = sizeof a;
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port = ntohs(a.sin_port);
    if (banner) {
      std::string text = banner;
      thread = std::thread([this, text] {
        while (!stop) {
          pollfd p{fd, POLLIN, 0};
          if (poll(&p, 1, 50) <= 0) continue;
          int c = accept(fd, nullptr, nullptr);
          if (c < 0) continue;
          (void)!write(c, text.data(), text.size());
          sleep_ms(100);
          close(c);
        }
      });
    }
  }
  ~FakeServer() {
    stop = true;
    if (thread.joinable()) thread.join();
    close(fd);
  }
};

} // namespace

TEST_CASE("redis uri: malformed URIs are usage errors") {
  ScopedEnv no_password("SIMBA_REDIS_PASSWORD", nullptr);
  for (const char* uri : {"redis:",
                          "redis:host",
                          "redis://h:99999",
                          "redis://h:0",
                          "redis://h:abc",
                          "redis://h:",
                          "redis://h/abc",
                          "redis://h/-1",
                          "redis://h?foo=1",
                          "redis://h?timeout=xyz",
                          "redis://h?timeout=0",
                          "redis://h?prefix=a{b",
                          "redis://h?prefix",
                          "redis://h/1?db=2",
                          "redis://[::1",
                          "redis://user@h",
                          "redis://h?prefix=%zz",
                          "redis+unix://",
                          "redis+unix:///",
                          "redis+unix://host/path.sock",
                          "redis+unix:///tmp/dir/",
                          "redis+unix:///x.sock?db=a",
                          "redis+unix:relative.sock"}) {
    CAPTURE(uri);
    std::string msg = error_of<simba::UsageError>([&] { open_backend(uri); });
    CHECK_FALSE(msg.empty());
  }
}

TEST_CASE("redis: connection refused is UnavailableError, quickly, without the password") {
  int port = free_port();
  int64_t t0 = mono_ms();
  std::string msg = error_of<simba::UnavailableError>([&] {
    open_backend("redis://:s3cr3t-pw@127.0.0.1:" + std::to_string(port) + "/0?timeout=5s");
  });
  CHECK(mono_ms() - t0 < 1000);
  CHECK(msg.find("s3cr3t-pw") == std::string::npos);
  CHECK(msg.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
  MESSAGE(msg);

  std::string unix_msg = error_of<simba::UnavailableError>(
      [&] { open_backend("redis+unix:///nonexistent/dir/redis.sock"); });
  CHECK(unix_msg.find("/nonexistent/dir/redis.sock") != std::string::npos);
}

TEST_CASE("redis: a port where no Redis speaks is UnavailableError within the timeout (at open, or "
          "at the first call that carries the checks)") {
  {
    FakeServer silent; // accepts (backlog), never answers
    int64_t t0 = mono_ms();
    std::string msg = error_of<simba::UnavailableError>([&] {
      open_backend("redis://127.0.0.1:" + std::to_string(silent.port) + "?timeout=300ms")
          ->get("m", k_timeout); // the checks may go with the first call
    });
    int64_t dt = mono_ms() - t0;
    CHECK(dt >= 250);
    CHECK(dt < 1500);
    MESSAGE(msg);
  }
  {
    FakeServer http("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    int64_t t0 = mono_ms();
    std::string msg = error_of<simba::UnavailableError>([&] {
      open_backend("redis://127.0.0.1:" + std::to_string(http.port) + "?timeout=2s")
          ->get("m", k_timeout);
    });
    CHECK(mono_ms() - t0 < 1500);
    CHECK(msg.find("protocol") != std::string::npos);
    MESSAGE(msg);
  }
}

TEST_CASE("redis: passwords — wrong one refused (69), never shown; URI or SIMBA_REDIS_PASSWORD") {
  SKIP_UNLESS_REDIS();
  OwnRedis server({"--requirepass", "right-pw-42"});
  server.set_password("right-pw-42");
  std::string base = "127.0.0.1:" + std::to_string(server.port()) + "/0?prefix=pw:&quarantine=off";
  ScopedEnv no_password("SIMBA_REDIS_PASSWORD", nullptr);

  std::string wrong =
      error_of<simba::UnavailableError>([&] { open_backend("redis://:wrong-pw-17@" + base); });
  CHECK(wrong.find("wrong-pw-17") == std::string::npos);
  CHECK(wrong.find("right-pw-42") == std::string::npos);
  CHECK(wrong.find("password") != std::string::npos);
  MESSAGE(wrong);

  std::string none = error_of<simba::UnavailableError>([&] { open_backend("redis://" + base); });
  CHECK(none.find("SIMBA_REDIS_PASSWORD") != std::string::npos);
  MESSAGE(none);

  {
    auto b = open_backend("redis://:right-pw-42@" + base);
    CHECK(b->describe() == "redis://" + base);
    auto m = unique_mutex("pw");
    require_ok(b->acquire(m, "A", 10000, 1000, k_timeout));
    CHECK(b->wakeups(m, "W").wait() >= 0); // the subscription authenticates too
    require_ok(b->release(m, "A", 0, k_timeout));
  }
  {
    ScopedEnv env("SIMBA_REDIS_PASSWORD", "right-pw-42");
    auto b = open_backend("redis://" + base);
    CHECK(b->describe().find("right-pw-42") == std::string::npos);
    require_ok(b->get(unique_mutex("pw-env"), k_timeout));
    // The URI's password wins over the environment's.
    CHECK_FALSE(error_of<simba::UnavailableError>([&] {
                  open_backend("redis://:wrong-pw-17@" + base);
                }).empty());
  }
  {
    // ACL user + password.
    ReplyPtr r =
        server.command({"ACL", "SETUSER", "simba-user", "on", ">user-pw-9", "~*", "&*", "+@all"});
    REQUIRE(r->type == REDIS_REPLY_STATUS);
    auto b = open_backend("redis://simba-user:user-pw-9@" + base);
    CHECK(b->describe() == "redis://simba-user@" + base);
    require_ok(b->get(unique_mutex("acl"), k_timeout));
    std::string bad = error_of<simba::UnavailableError>(
        [&] { open_backend("redis://simba-user:nope-pw-3@" + base); });
    CHECK(bad.find("nope-pw-3") == std::string::npos);
  }
}

TEST_CASE("redis: key layout — hash tag, no TTL on the lease (nothing evicts it), a fence that "
          "never expires") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  auto b = open_backend(server.uri("lay:"));
  CHECK(b->describe() ==
        "redis://127.0.0.1:" + std::to_string(server.port()) + "/0?prefix=lay:&quarantine=off");
  Reply a = require_ok(b->acquire("ci/deploy", "A", 5000, 2000, k_timeout));
  ReplyPtr h = server.command({"HGET", "lay:{ci/deploy}", "owner"});
  REQUIRE(h->type == REDIS_REPLY_STRING);
  CHECK(std::string(h->str, h->len) == "A");
  // No TTL: a volatile-* eviction policy would take the only key with
  // one first; the scripts compare transition_at instead.
  ReplyPtr pttl = server.command({"PTTL", "lay:{ci/deploy}"});
  REQUIRE(pttl->type == REDIS_REPLY_INTEGER);
  CHECK(pttl->integer == -1);
  ReplyPtr at = server.command({"HGET", "lay:{ci/deploy}", "transition_at"});
  REQUIRE(at->type == REDIS_REPLY_STRING);
  CHECK(std::stoll(std::string(at->str, at->len)) == a.observed.lease.transition_at);
  ReplyPtr fence_ttl = server.command({"PTTL", "lay:{ci/deploy}:fence"});
  CHECK(fence_ttl->integer == -1);
  ReplyPtr fence = server.command({"GET", "lay:{ci/deploy}:fence"});
  REQUIRE(fence->type == REDIS_REPLY_STRING);
  CHECK(std::stoull(std::string(fence->str, fence->len)) == a.observed.lease.fencing_token);

  require_ok(b->release("ci/deploy", "A", 0, k_timeout));
  CHECK(server.command({"EXISTS", "lay:{ci/deploy}"})->integer == 0);
  CHECK(server.command({"EXISTS", "lay:{ci/deploy}:fence"})->integer == 1);
  auto listing = b->inspect("", k_timeout);
  REQUIRE(listing.ok);
  REQUIRE(listing.mutexes.size() == 1);
  CHECK(listing.mutexes[0].mutex == "ci/deploy");
  CHECK(listing.mutexes[0].lease.fencing_token == a.observed.lease.fencing_token);

  // Another prefix is another namespace; glob characters in it are literal.
  auto other = open_backend("redis://127.0.0.1:" + std::to_string(server.port()) + "?prefix=l*");
  auto other_list = other->inspect("", k_timeout);
  REQUIRE(other_list.ok);
  CHECK(other_list.mutexes.empty());
}

TEST_CASE("redis: embedded scripts — the SHA1s are Redis', and NOSCRIPT falls back to EVAL") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  auto b = open_backend(server.uri());
  auto m = unique_mutex("scripts");
  REQUIRE(server.command({"SCRIPT", "FLUSH"})->type == REDIS_REPLY_STATUS);
  Reply held = require_ok(b->acquire(m, "A", 10000, 1000, k_timeout));
  require_ok(b->guard(m, "A", held.observed.lease.fencing_token, 10000, 1000, k_timeout));
  require_ok(b->get(m, k_timeout));
  REQUIRE(b->inspect("", k_timeout).ok);
  require_ok(b->release(m, "A", 0, k_timeout));
  require_ok(b->force_release(m, 0, k_timeout));
  namespace lua = simba::backend::redis::lua;
  for (const lua::Script* s : {&lua::k_acquire, &lua::k_guard, &lua::k_release,
                               &lua::k_force_release, &lua::k_get, &lua::k_inspect}) {
    CAPTURE(s->name);
    ReplyPtr r = server.command({"SCRIPT", "EXISTS", s->sha1});
    REQUIRE(r->type == REDIS_REPLY_ARRAY);
    CHECK(r->element[0]->integer == 1); // EVAL cached it under the same SHA1
  }
  // And again after a flush, with the cache warm on the client side.
  REQUIRE(server.command({"SCRIPT", "FLUSH"})->type == REDIS_REPLY_STATUS);
  Reply a = require_ok(b->acquire(m, "B", 10000, 1000, k_timeout));
  CHECK(a.changed);
}

TEST_CASE("redis: restarted without persistence — the lease is gone, tokens keep increasing") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  auto b = open_backend(server.uri());
  auto m = unique_mutex("restart");
  uint64_t highest = 0;
  for (int i = 0; i < 5; ++i) {
    Reply a = require_ok(b->acquire(m, "A", 10000, 1000, k_timeout));
    highest = std::max(highest, a.observed.lease.fencing_token);
    require_ok(b->release(m, "A", 0, k_timeout));
  }
  Reply held = require_ok(b->acquire(m, "A", 10000, 1000, k_timeout));
  highest = std::max(highest, held.observed.lease.fencing_token);

  server.restart();
  // The old connection is dead: the next call goes to a new one at once
  // (not a failure), and shows that the lease is gone.
  Reply g = require_ok(b->guard(m, "A", held.observed.lease.fencing_token, 10000, 1000, k_timeout));
  CHECK_FALSE(g.changed);
  CHECK(g.observed.lease.owner_id.empty());

  auto other = open_backend(server.uri());
  Reply next = require_ok(other->acquire(m, "B", 10000, 1000, k_timeout));
  CHECK(next.changed);
  CHECK(next.observed.lease.fencing_token > highest);
  MESSAGE("token before the restart " << highest << ", after "
                                      << next.observed.lease.fencing_token);

  // Restarted again right away: still larger.
  uint64_t before = next.observed.lease.fencing_token;
  server.restart();
  Reply again = require_ok(b->acquire(m, "C", 10000, 1000, k_timeout));
  CHECK(again.observed.lease.fencing_token > before);
}

TEST_CASE("redis: a paused server (SIGSTOP) gives indeterminate within the call's timeout, never a "
          "hang") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  auto b = open_backend(server.uri()); // URI timeout 1s
  auto m = unique_mutex("paused");
  Reply a = require_ok(b->acquire(m, "A", 10000, 2000, k_timeout));

  server.pause();
  int64_t t0 = mono_ms();
  Reply g = b->guard(m, "A", a.observed.lease.fencing_token, 10000, 2000, 300);
  int64_t dt = mono_ms() - t0;
  CHECK(g.status == Reply::Status::indeterminate); // sent, no answer: it may have been applied
  CHECK(dt >= 290);
  CHECK(dt < 600);
  MESSAGE("guard on a paused server: " << g.error << " after " << dt << " ms");

  // The next call does not reuse the connection that still owes an answer;
  // the kernel accepts the new one, the server does not answer it either.
  t0 = mono_ms();
  Reply acq = b->acquire(m, "A", 10000, 2000, 200);
  dt = mono_ms() - t0;
  CHECK_FALSE(acq.ok());
  CHECK(dt < 500);
  // The URI's timeout caps a longer budget.
  t0 = mono_ms();
  Reply capped = b->get(m, 10000);
  dt = mono_ms() - t0;
  CHECK_FALSE(capped.ok());
  CHECK(dt < 1500);

  server.resume();
  Reply after =
      require_ok(b->guard(m, "A", a.observed.lease.fencing_token, 10000, 2000, k_timeout));
  CHECK(after.observed.lease.owner_id == "A");
  CHECK(after.observed.lease.fencing_token == a.observed.lease.fencing_token);
}

TEST_CASE("redis: the subscription breaks with the server, wakes the waiter, and comes back") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  auto owner = open_backend(server.uri());
  auto watcher = open_backend(server.uri());
  auto m = unique_mutex("resubscribe");
  require_ok(owner->acquire(m, "A", 10000, 1000, k_timeout));
  simba::backend::Wakeups& wake = watcher->wakeups(m, "W");
  int fd = wake.wait();
  REQUIRE(fd >= 0);
  CHECK(wake.wait() == fd); // idempotent

  server.restart();
  CHECK(wait_for_wakeup(wake, fd, 2000)); // a release may have been missed
  CHECK(wake.wait() == -1);               // not again at once
  int64_t t0 = mono_ms();
  int again = -1;
  while (again < 0 && mono_ms() - t0 < 3000) {
    sleep_ms(50);
    again = wake.wait();
  }
  REQUIRE(again >= 0);
  CHECK(mono_ms() - t0 >= 800);
  require_ok(owner->acquire(m, "A", 10000, 1000, k_timeout));
  require_ok(owner->release(m, "A", 0, k_timeout));
  CHECK(wait_for_wakeup(wake, again, 1000));
}

TEST_CASE("redis+unix: a Unix socket URI works") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  std::string uri = "redis+unix://" + server.socket_path() + "?db=2&prefix=ux:&quarantine=off";
  auto b = open_backend(uri);
  CHECK(b->describe() == uri);
  auto m = unique_mutex("unix");
  Reply a = require_ok(b->acquire(m, "A", 10000, 1000, k_timeout));
  CHECK(a.changed);
  int fd = b->wakeups(m, "W").wait();
  CHECK(fd >= 0);
  auto tcp = open_backend("redis://127.0.0.1:" + std::to_string(server.port()) + "/2?prefix=ux:");
  Reply seen = require_ok(tcp->get(m, k_timeout));
  CHECK(seen.observed.lease.owner_id == "A"); // same database 2
  require_ok(tcp->release(m, "A", 0, k_timeout));
  CHECK(wait_for_wakeup(b->wakeups(m, "W"), fd, 1000));
  auto db0 = open_backend("redis://127.0.0.1:" + std::to_string(server.port()) + "/0?prefix=ux:");
  CHECK(require_ok(db0->get(m, k_timeout)).observed.lease.fencing_token == 0);
}

namespace {
int queue_up(Backend& b, const std::string& m, const std::string& id);

std::string info_field(OwnRedis& server, const std::string& section, const std::string& name) {
  ReplyPtr r = server.command({"INFO", section});
  std::string text(r->str, r->len);
  size_t at = text.find(name + ":");
  REQUIRE(at != std::string::npos);
  at += name.size() + 1;
  return text.substr(at, text.find('\r', at) - at);
}

// Waits out the quarantine a fresh database starts with (a first use: its
// marker is missing), by acquiring as simba would; returns the lease.
Reply acquire_after_quarantine(Backend& b, const std::string& m, const std::string& id, int64_t ttl,
                               int64_t transition) {
  for (int64_t until = mono_ms() + ttl + transition + 5000; mono_ms() < until; sleep_ms(100)) {
    Reply r = require_ok(b.acquire(m, id, ttl, transition, k_timeout));
    if (r.changed) return r;
  }
  FAIL("no lease after a quarantine of " << ttl + transition + 1000 << " ms");
  return {};
}

// The terms of the lease that may be lost (B's) and of the next one (C's):
// the same, as docs/backends/redis.md asks of the contenders of a mutex.
// Short: each case waits out a quarantine (ttl + transition + 1 s) twice,
// the warm-up's and the one it checks.
constexpr int64_t k_ttl = 1000, k_transition = 250;

// The first use of a fresh database waits a quarantine (its marker is
// missing): waited out here, on a mutex of its own, with the terms the test
// uses next (so that the server is also old enough for the rule of
// earlier versions, which looked at its uptime: the mutation check).
void warm_up(Backend& b, int64_t ttl = k_ttl, int64_t transition = k_transition) {
  auto m = unique_mutex("warm-up");
  acquire_after_quarantine(b, m, "warm-up", ttl, transition);
  require_ok(b.release(m, "warm-up", 0, k_timeout));
}

// After a possible loss: C's acquire must find the mutex in quarantine
// until at least `owner_end_ms` (the lost lease's end, server clock), and
// then get a larger token than `last_token`.
void check_quarantine_then_token(Backend& c, const std::string& m, int64_t owner_end_ms,
                                 uint64_t last_token) {
  Reply early = require_ok(c.acquire(m, "C", k_ttl, k_transition, k_timeout));
  CHECK_FALSE(early.changed);
  const simba::core::Lease& q = early.observed.lease;
  CHECK(q.quarantine);
  CHECK(simba::core::window_at(q, early.observed.now) == simba::core::Window::quarantine);
  CHECK(q.transition_at >= owner_end_ms);
  // The longest lease + 1 s from this first acquire after the loss (the
  // check that holds the rule when the loss took longer than the lease's
  // part beyond 1 s: a quarantine of 1 s alone also ends after B's lease).
  CHECK(q.transition_at >= early.observed.now + k_ttl + k_transition + 1000);
  // get (status) shows it too.
  Reply seen = require_ok(c.get(m, k_timeout));
  CHECK(seen.observed.lease.quarantine);
  CHECK(seen.observed.lease.transition_at == q.transition_at);
  sleep_ms(int(q.transition_at - early.observed.now) + 100);
  Reply later = require_ok(c.acquire(m, "C", k_ttl, k_transition, k_timeout));
  CHECK(later.changed);
  CHECK(later.observed.lease.fencing_token > last_token);
  CHECK(later.observed.now >= owner_end_ms);
}

} // namespace

TEST_CASE(
    "redis: restart from an RDB snapshot that misses the last lease: quarantine, tokens increase") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  auto m = unique_mutex("rdb");
  auto a = open_backend(server.guarded_uri("rdb:"));
  warm_up(*a);
  Reply ra = require_ok(a->acquire(m, "A", k_ttl, k_transition, k_timeout));
  require_ok(a->release(m, "A", 0, k_timeout));
  REQUIRE(server.command({"SAVE"})->type == REDIS_REPLY_STATUS);
  // B's lease is newer than the snapshot.
  Reply rb = require_ok(a->acquire(m, "B", k_ttl, k_transition, k_timeout));
  REQUIRE(rb.changed);
  server.crash_and_restart();
  auto c = open_backend(server.guarded_uri("rdb:"));
  CHECK(require_ok(c->get(m, k_timeout)).observed.lease.fencing_token ==
        ra.observed.lease.fencing_token);
  check_quarantine_then_token(*c, m, rb.observed.lease.transition_at,
                              rb.observed.lease.fencing_token);
}

TEST_CASE("redis: restart from an AOF (everysec) that lost its last writes: quarantine, tokens "
          "increase") {
  SKIP_UNLESS_REDIS();
  OwnRedis server({"--appendonly", "yes", "--appendfsync", "everysec"});
  auto m = unique_mutex("aof");
  auto a = open_backend(server.guarded_uri("aof:"));
  warm_up(*a);
  require_ok(a->acquire(m, "A", k_ttl, k_transition, k_timeout));
  require_ok(a->release(m, "A", 0, k_timeout));
  // What a crash within everysec's second loses: the file as it was before
  // B's acquire (kill -9 alone loses nothing the kernel has).
  namespace fs = std::filesystem;
  fs::path incr;
  for (const auto& e : fs::directory_iterator(fs::path(server.dir()) / "appendonlydir"))
    if (e.path().string().find(".incr.aof") != std::string::npos) incr = e.path();
  REQUIRE(!incr.empty());
  server.command({"PING"});
  sleep_ms(1200); // written out
  auto kept = fs::file_size(incr);
  Reply rb = require_ok(a->acquire(m, "B", k_ttl, k_transition, k_timeout));
  REQUIRE(rb.changed);
  sleep_ms(1200);
  REQUIRE(fs::file_size(incr) > kept);
  server.kill_server();
  fs::resize_file(incr, kept);
  server.crash_and_restart();
  auto c = open_backend(server.guarded_uri("aof:"));
  CHECK(require_ok(c->get(m, k_timeout)).observed.lease.owner_id.empty()); // B's lease is lost
  check_quarantine_then_token(*c, m, rb.observed.lease.transition_at,
                              rb.observed.lease.fencing_token);
}

TEST_CASE("redis: a replica promoted (REPLICAOF NO ONE) that missed the last lease: quarantine") {
  SKIP_UNLESS_REDIS();
  OwnRedis master({"--repl-diskless-sync-delay", "0"});
  OwnRedis replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  auto m = unique_mutex("failover");
  auto a = open_backend(master.guarded_uri("fo:"));
  warm_up(*a);
  Reply ra = require_ok(a->acquire(m, "A", k_ttl, k_transition, k_timeout));
  require_ok(a->release(m, "A", 0, k_timeout));
  // The replica has it all (the marker and the fence) ...
  bool synced = false;
  for (int i = 0; i < 50 && !synced; ++i) {
    ReplyPtr r = master.command({"WAIT", "1", "100"});
    synced = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
  }
  REQUIRE(synced);
  // ... but not B's lease: it lost its master (pointed at a port where
  // nobody listens, it keeps its data) before B acquired, and is promoted.
  REQUIRE(replica.command({"REPLICAOF", "127.0.0.1", std::to_string(free_port())})->type ==
          REDIS_REPLY_STATUS);
  Reply rb = require_ok(a->acquire(m, "B", k_ttl, k_transition, k_timeout));
  REQUIRE(rb.changed);
  master.kill_server();
  REQUIRE(replica.command({"REPLICAOF", "NO", "ONE"})->type == REDIS_REPLY_STATUS);
  auto c = open_backend(replica.guarded_uri("fo:"));
  CHECK(require_ok(c->get(m, k_timeout)).observed.lease.fencing_token ==
        ra.observed.lease.fencing_token);
  check_quarantine_then_token(*c, m, rb.observed.lease.transition_at,
                              rb.observed.lease.fencing_token);
}

TEST_CASE("redis: FLUSHALL and FLUSHDB while a lease runs: quarantine, tokens increase") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  auto a = open_backend(server.guarded_uri("fl:"));
  warm_up(*a);
  for (const char* flush : {"FLUSHALL", "FLUSHDB"}) {
    CAPTURE(flush);
    auto m = unique_mutex("flush");
    Reply rb = acquire_after_quarantine(*a, m, "B", k_ttl, k_transition);
    REQUIRE(server.command({flush})->type == REDIS_REPLY_STATUS);
    auto c = open_backend(server.guarded_uri("fl:"));
    check_quarantine_then_token(*c, m, rb.observed.lease.transition_at,
                                rb.observed.lease.fencing_token);
    // The owner's guard sees that its lease is gone.
    Reply g = require_ok(
        a->guard(m, "B", rb.observed.lease.fencing_token, k_ttl, k_transition, k_timeout));
    CHECK_FALSE(g.observed.lease.owned_by("B", g.observed.now));
  }
}

TEST_CASE("redis: an acquire that fails on a key of the wrong type leaves the fence as it was") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  auto a = open_backend(server.guarded_uri("wt:"));
  warm_up(*a);
  auto m = unique_mutex("wrongtype");
  Reply first = acquire_after_quarantine(*a, m, "A", k_ttl, k_transition);
  require_ok(a->release(m, "A", 0, k_timeout));
  std::string fence = "wt:{" + m + "}:fence";
  std::string before = server.command({"GET", fence})->str;
  // Someone else's data at the waiters' key: every acquire fails, and none
  // may move the fence (a failing script keeps the writes it made).
  REQUIRE(server.command({"SET", "wt:{" + m + "}:waiters", "not a sorted set"})->type ==
          REDIS_REPLY_STATUS);
  for (int i = 0; i < 3; ++i) {
    Reply r = a->acquire(m, "B", k_ttl, k_transition, k_timeout);
    CHECK_FALSE(r.ok());
    CHECK(r.error.find("WRONGTYPE") != std::string::npos);
  }
  CHECK(std::string(server.command({"GET", fence})->str) == before);
  CHECK(server.command({"EXISTS", "wt:{" + m + "}"})->integer == 0);
  (void)first;
}

TEST_CASE("redis: at maxmemory with volatile-lru a running lease is not evicted") {
  SKIP_UNLESS_REDIS();
  OwnRedis server({"--maxmemory-policy", "volatile-lru"});
  auto m = unique_mutex("evict");
  auto a = open_backend(server.guarded_uri("ev:"));
  warm_up(*a); // then B's longer lease is granted at once: the marker is this run's
  Reply rb = require_ok(a->acquire(m, "B", 5000, 500, k_timeout));
  REQUIRE(rb.changed);
  // Fill the server to its limit with keys that never expire: only keys
  // with a TTL may be evicted.
  long used = std::atol(info_field(server, "memory", "used_memory").c_str());
  REQUIRE(server.command({"CONFIG", "SET", "maxmemory", std::to_string(used + 512 * 1024)})->type ==
          REDIS_REPLY_STATUS);
  std::string filler(4096, 'x');
  bool full = false;
  for (int i = 0; i < 2000 && !full; ++i) {
    ReplyPtr r = server.command({"SET", "filler:" + std::to_string(i), filler});
    full = r->type == REDIS_REPLY_ERROR && std::string(r->str).rfind("OOM", 0) == 0;
  }
  REQUIRE(full);
  auto c = open_backend(server.guarded_uri("ev:"));
  Reply rc = c->acquire(m, "C", 1000, 1000, k_timeout);
  CHECK_FALSE((rc.ok() && rc.changed)); // C gets nothing (or OOM)
  Reply seen = require_ok(c->get(m, k_timeout));
  CHECK(seen.observed.lease.owner_id == "B");
  CHECK(seen.observed.lease.fencing_token == rb.observed.lease.fencing_token);
}

// Redis rolls no script back when a later write fails (Redis 6 stops a
// script at its first write at maxmemory, after a PUBLISH, which is no
// write; 7.0 lets a started script write): the hand-over must write the new
// lease before it publishes it. MONITOR shows the order of the commands a
// script runs.
TEST_CASE("redis: a hand-over writes the new lease before it publishes the grant") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  auto m = unique_mutex("order");
  auto a = open_backend(server.uri("ord:"));
  require_ok(a->acquire(m, "A", 10000, 1000, k_timeout));
  auto w = open_backend(server.uri("ord:"));
  int fd = queue_up(*w, m, "W");

  timeval tv{2, 0};
  std::unique_ptr<redisContext, ContextFree> mon(
      redisConnectWithTimeout("127.0.0.1", server.port(), tv));
  REQUIRE((mon && !mon->err));
  redisSetTimeout(mon.get(), tv);
  ReplyPtr ok(static_cast<redisReply*>(redisCommand(mon.get(), "MONITOR")));
  REQUIRE(ok);
  REQUIRE(require_ok(a->release(m, "A", 0, k_timeout)).observed.lease.owner_id == "W");
  REQUIRE(wait_for_wakeup(w->wakeups(m, "W"), fd, 1000).kind == simba::backend::Wake::Kind::grant);

  std::vector<std::string> seen; // the script's commands, in order
  for (int i = 0; i < 200; ++i) {
    void* r = nullptr;
    if (redisGetReply(mon.get(), &r) != REDIS_OK || !r) break;
    ReplyPtr line(static_cast<redisReply*>(r));
    std::string text(line->str, line->len);
    if (text.find("[0 lua]") == std::string::npos) continue;
    std::string cmd = text.substr(text.find("] \"") + 3);
    cmd = cmd.substr(0, cmd.find('"'));
    seen.push_back(cmd);
    if (cmd == "PUBLISH" && text.find("grant") != std::string::npos) break;
  }
  std::string order;
  for (const auto& c : seen) order += c + " ";
  MESSAGE("the release script ran: " << order);
  auto at = [&](const std::string& c) {
    return std::find(seen.begin(), seen.end(), c) - seen.begin();
  };
  REQUIRE(at("PUBLISH") < long(seen.size()));
  CHECK(at("SET") < at("PUBLISH"));  // the fence
  CHECK(at("HSET") < at("PUBLISH")); // the lease
}

TEST_CASE(
    "redis: an allkeys-* eviction policy is refused at connect (69), naming maxmemory-policy") {
  SKIP_UNLESS_REDIS();
  OwnRedis server({"--maxmemory-policy", "allkeys-lru"});
  std::string msg = error_of<simba::UnavailableError>([&] { open_backend(server.uri()); });
  CHECK(msg.find("maxmemory-policy allkeys-lru") != std::string::npos);
  MESSAGE(msg);
  server.command({"CONFIG", "SET", "maxmemory-policy", "volatile-ttl"});
  CHECK_NOTHROW(open_backend(server.uri()));
}

// With the quarantine on, no password and database 0, the checks of the
// server go in the first call's write (server_check.hpp: hello_can_wait()),
// and the first script learns the server's run itself. The scripts are
// loaded first, as on any server simba has used: a NOSCRIPT would send the
// script again, after the checks' answers, with the run known.
TEST_CASE("redis: the first call carries the server checks — a fresh database's first acquire "
          "is quarantined, and an allkeys-* server gets no write at all (69)") {
  SKIP_UNLESS_REDIS();
  namespace lua = simba::backend::redis::lua;
  auto load_acquire = [](OwnRedis& server) {
    ReplyPtr sha = server.command({"SCRIPT", "LOAD", lua::k_acquire.text});
    REQUIRE(sha->type == REDIS_REPLY_STRING);
    REQUIRE(std::string(sha->str) == lua::k_acquire.sha1);
  };
  {
    OwnRedis fresh; // no marker: a first use waits a quarantine
    load_acquire(fresh);
    auto b = open_backend(fresh.guarded_uri("first:"));
    Reply r = require_ok(b->acquire(unique_mutex("first"), "A", 2000, 500, k_timeout));
    CHECK_FALSE(r.changed);
    CHECK(r.observed.lease.quarantine);
    CHECK(fresh.command({"HGET", "simba:server", "run"})->type == REDIS_REPLY_STRING);
  }
  {
    OwnRedis evicting({"--maxmemory-policy", "allkeys-lru"});
    load_acquire(evicting);
    auto b = open_backend(evicting.guarded_uri("first:"));
    std::string msg = error_of<simba::UnavailableError>(
        [&] { b->acquire(unique_mutex("first"), "A", 2000, 500, k_timeout); });
    CHECK(msg.find("maxmemory-policy allkeys-lru") != std::string::npos);
    MESSAGE(msg);
    ReplyPtr keys = evicting.command({"DBSIZE"});
    REQUIRE(keys->type == REDIS_REPLY_INTEGER);
    CHECK(keys->integer == 0); // not even the marker: the script refused before it wrote
  }
}

TEST_CASE("redis: wake-ups are per database: a release in db 1 wakes no waiter of db 2") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  auto m = unique_mutex("dbs");
  auto uri = [&](int db) {
    return "redis://127.0.0.1:" + std::to_string(server.port()) + "/" + std::to_string(db) +
           "?prefix=dbs:&quarantine=off";
  };
  auto a1 = open_backend(uri(1));
  auto a2 = open_backend(uri(2));
  require_ok(a1->acquire(m, "A", 10000, 1000, k_timeout));
  require_ok(a2->acquire(m, "B", 10000, 1000, k_timeout));
  auto w1 = open_backend(uri(1));
  auto w2 = open_backend(uri(2));
  int fd1 = queue_up(*w1, m, "W");
  int fd2 = queue_up(*w2, m, "W"); // the same label in the other database
  CHECK(require_ok(a1->release(m, "A", 0, k_timeout)).observed.lease.owner_id == "W");
  CHECK(wait_for_wakeup(w1->wakeups(m, "W"), fd1, 1000).kind == simba::backend::Wake::Kind::grant);
  CHECK_FALSE(wait_for_wakeup(w2->wakeups(m, "W"), fd2, 500)); // neither woken nor granted
  CHECK(require_ok(w2->get(m, k_timeout)).observed.lease.owner_id == "B");
  // A forced release in db 1 tells nobody in db 2 either.
  int owner_fd = a2->wakeups(m, "B").own();
  REQUIRE(owner_fd >= 0);
  require_ok(w1->force_release(m, 0, k_timeout));
  CHECK_FALSE(wait_for_wakeup(a2->wakeups(m, "B"), owner_fd, 500));
}

TEST_CASE(
    "redis: a restart without persistence: no new lease before a lost one has ended (quarantine)") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  std::string uri =
      "redis://127.0.0.1:" + std::to_string(server.port()) + "/0?prefix=q:&timeout=1s";
  auto owner = open_backend(uri);
  auto m = unique_mutex("quarantine");
  // Wait out the first quarantine: a lease of 1 s + 1 s needs 3 s of uptime.
  Reply a;
  for (int i = 0; i < 100; ++i) {
    a = require_ok(owner->acquire(m, "A", 1000, 1000, k_timeout));
    if (a.changed) break;
    sleep_ms(100);
  }
  REQUIRE(a.changed);

  // The server restarts and forgets the lease; A's CMD may run until A's
  // deadline. B must not get a lease before that.
  server.restart();
  auto b = open_backend(uri);
  Reply early = require_ok(b->acquire(m, "B", 1000, 1000, k_timeout));
  CHECK_FALSE(early.changed);
  CHECK(early.observed.lease.revoked_at(early.observed.now)); // no owner ...
  CHECK(early.observed.lease.quarantine);                     // in quarantine ...
  int64_t wait = early.observed.lease.transition_at - early.observed.now;
  CHECK(wait >= 1000); // ... for a lease's time
  CHECK(wait <= 3100);
  // A's guard sees that its lease is gone.
  Reply g = require_ok(owner->guard(m, "A", a.observed.lease.fencing_token, 1000, 1000, k_timeout));
  CHECK_FALSE(g.observed.lease.owned_by("A", g.observed.now));
  // Then B gets it, with a larger token.
  sleep_ms(int(wait) + 1100);
  Reply later = require_ok(b->acquire(m, "B", 1000, 1000, k_timeout));
  CHECK(later.changed);
  CHECK(later.observed.lease.fencing_token > a.observed.lease.fencing_token);
}

namespace {
int64_t boottime_now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// A waiter as simba makes one: it tried (and so told its ttl and
// transition), then queued.
int queue_up(Backend& b, const std::string& m, const std::string& id) {
  Reply tried = require_ok(b.acquire(m, id, 4000, 500, k_timeout));
  REQUIRE(simba::backend::held_by_other(tried, id));
  int fd = b.wakeups(m, id).wait();
  REQUIRE(fd >= 0);
  return fd;
}
} // namespace

TEST_CASE(
    "redis: a release hands the mutex over to the first waiter, whose wake-up carries the lease") {
  SKIP_UNLESS_REDIS();
  auto owner = open_test_backend();
  auto m = unique_mutex("handover");
  Reply first = require_ok(owner->acquire(m, "A", 10000, 1000, k_timeout));
  auto w = open_test_backend();
  int64_t before = boottime_now_ms();
  int fd = queue_up(*w, m, "W");

  Reply rel = require_ok(owner->release(m, "A", 0, k_timeout));
  CHECK(rel.changed);
  CHECK(rel.observed.lease.owner_id == "W"); // the lease after the call
  simba::backend::Wake woken = wait_for_wakeup(w->wakeups(m, "W"), fd, 1000);
  REQUIRE(woken.kind == simba::backend::Wake::Kind::grant);
  const simba::backend::Grant* g = &woken.grant;
  CHECK_FALSE(w->wakeups(m, "W").wake()); // once
  CHECK(g->reply.ok());
  const simba::core::Lease& l = g->reply.observed.lease;
  CHECK(l.owner_id == "W");
  CHECK(l.fencing_token > first.observed.lease.fencing_token);
  CHECK(l.acquired_at == g->reply.observed.now);
  CHECK(l.ttl_at == l.acquired_at + 4000); // W's own terms, not A's
  CHECK(l.transition_at == l.ttl_at + 500);
  // Counted from before anything W sent on its subscription, never later.
  CHECK(g->sent_at_ms >= before);
  CHECK(g->sent_at_ms <= boottime_now_ms());

  // The server agrees, and W is its owner now: leaving the queue as the
  // owner does not end the lease, and W renews it.
  Reply seen = require_ok(owner->get(m, k_timeout));
  CHECK(seen.observed.lease.owner_id == "W");
  CHECK(seen.observed.lease.fencing_token == l.fencing_token);
  w->wakeups(m, "W").own();
  w->wakeups(m, "W").settle(); // leaves the queue, were it in it
  CHECK(require_ok(owner->get(m, k_timeout)).observed.lease.owner_id == "W");
  CHECK(require_ok(w->guard(m, "W", l.fencing_token, 4000, 500, k_timeout)).changed);
  CHECK(require_ok(w->release(m, "W", 0, k_timeout)).changed);
  CHECK(require_ok(owner->get(m, k_timeout)).observed.lease.owner_id.empty());
}

TEST_CASE("redis: a hand-over skips dead waiters, and one that leaves unused passes it on") {
  SKIP_UNLESS_REDIS();
  auto owner = open_test_backend();
  auto m = unique_mutex("passon");
  require_ok(owner->acquire(m, "A", 10000, 1000, k_timeout));
  // W0 dies queued (no destructor: its connections close with it).
  int status = run_in_child([&] {
    auto b = open_test_backend();
    queue_up(*b, m, "W0");
    _exit(0);
    return true;
  });
  REQUIRE(status == 0);
  auto w1 = open_test_backend();
  int fd1 = queue_up(*w1, m, "W1");
  auto w2 = open_test_backend();
  int fd2 = queue_up(*w2, m, "W2");

  // W0 is skipped: W1, the first live waiter, owns the mutex.
  CHECK(require_ok(owner->release(m, "A", 0, k_timeout)).observed.lease.owner_id == "W1");
  // W1 leaves without having used it (its wake-up unread): the lease ends
  // and goes on to W2.
  w1.reset();
  simba::backend::Wake woken = wait_for_wakeup(w2->wakeups(m, "W2"), fd2, 1000);
  REQUIRE(woken.kind == simba::backend::Wake::Kind::grant);
  const simba::backend::Grant* g = &woken.grant;
  CHECK(g->reply.observed.lease.owner_id == "W2");
  CHECK(require_ok(owner->get(m, k_timeout)).observed.lease.owner_id == "W2");
  (void)fd1;
  require_ok(w2->release(m, "W2", 0, k_timeout));
}

TEST_CASE("redis: a dequeue that arrives after the waiter's own acquire leaves the claimed lease "
          "alone") {
  SKIP_UNLESS_REDIS();
  auto owner = open_test_backend();
  auto m = unique_mutex("lateleave");
  require_ok(owner->acquire(m, "A", 10000, 1000, k_timeout));
  auto w1 = open_test_backend();
  int fd1 = queue_up(*w1, m, "W1");
  auto w2 = open_test_backend();
  int fd2 = queue_up(*w2, m, "W2");
  // The release hands the lease to W1, which has not read the grant yet.
  CHECK(require_ok(owner->release(m, "A", 0, k_timeout)).observed.lease.owner_id == "W1");
  // W1's own acquire claims it first (on another connection, as a retry
  // after a timed-out call does): a renewal, CMD may start now.
  auto w1_again = open_test_backend();
  auto claimed = require_ok(w1_again->acquire(m, "W1", 10000, 1000, k_timeout));
  REQUIRE(claimed.observed.lease.owner_id == "W1");
  // Then W1's dequeue (sent before, on the slower connection) arrives: it
  // must not end the lease whose CMD runs, nor hand it to W2.
  w1.reset();
  auto after = require_ok(owner->get(m, k_timeout));
  CHECK(after.observed.lease.owner_id == "W1");
  CHECK(after.observed.lease.fencing_token == claimed.observed.lease.fencing_token);
  CHECK(wait_for_wakeup(w2->wakeups(m, "W2"), fd2, 300).kind == simba::backend::Wake::Kind::none);
  // W1's own release hands it on to W2.
  require_ok(w1_again->release(m, "W1", claimed.observed.lease.fencing_token, k_timeout));
  simba::backend::Wake woken = wait_for_wakeup(w2->wakeups(m, "W2"), fd2, 1000);
  CHECK(woken.kind == simba::backend::Wake::Kind::grant);
  (void)fd1;
  require_ok(w2->release(m, "W2", 0, k_timeout));
}
