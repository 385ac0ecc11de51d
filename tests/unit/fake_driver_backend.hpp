#pragma once
// A fake of the real backend::Backend interface for the driver's test: the
// acquisition rule of DESIGN §2 in memory (fake_backend.hpp) on the driver's
// own clock (sys::boottime_ms()); its wake-ups (backend/wakeups.hpp) with a
// descriptor the test arms (a timerfd: readable some milliseconds later,
// while the driver sleeps in poll) and a grant the test scripts; call
// counts, and hooks that run inside a call (to raise a signal in the middle
// of one, say).
#include "backend/backend.hpp"
#include "backend/wakeups.hpp"
#include "fake_backend.hpp"
#include "sys/clock.hpp"

#include <sys/timerfd.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace simba::test {

class DriverFakeBackend final : public backend::Backend, public backend::Wakeups {
public:
  DriverFakeBackend() : m_timer(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) {}
  ~DriverFakeBackend() override { ::close(m_timer); }

  FakeBackend store; // the leases; its clock is set to boottime_ms() at every call

  // Counts of the lease operations, and the tokens the releases named.
  int acquires = 0, guards = 0, holds = 0, releases = 0;
  // Of the wake-ups: wait() and own() calls, wake()s that found the
  // descriptor readable, settle()s.
  int waits = 0, owns = 0, wakes = 0, settles = 0;
  std::vector<uint64_t> released_tokens;
  // When (sys::boottime_ms()) the last acquire returned and the first
  // release was called: CMD ran somewhere between the two.
  int64_t acquired_at_ms = 0, released_at_ms = 0;

  // Run inside a lease operation, before it is applied (`op` says which).
  std::function<void(core::Op op)> during_call;
  // Run inside wait() and inside a wake() that found the descriptor readable.
  std::function<void()> on_wait;
  std::function<void()> on_wake;
  // What look_after_queueing() answers.
  bool look = true;
  // Handed to the driver by take_grant() after the next wake-up.
  std::optional<backend::Grant> grant;

  // The wake-up descriptor becomes readable in `ms` milliseconds.
  void wake_in(int64_t ms) {
    itimerspec t{};
    t.it_value.tv_sec = ms / 1000;
    t.it_value.tv_nsec = long(ms % 1000) * 1000000 + 1; // never 0: that disarms
    timerfd_settime(m_timer, 0, &t, nullptr);
  }

  // `from` releases the mutex and hands it over to `to`, as the Redis
  // release does: the lease is `to`'s now, and take_grant() tells it so.
  void hand_over(const std::string& mutex, const std::string& from, const std::string& to,
                 int64_t ttl_ms, int64_t transition_ms) {
    store.now = sys::boottime_ms();
    store.release(mutex, from);
    backend::Grant g;
    g.reply = to_reply(store.acquire(mutex, to, ttl_ms, transition_ms));
    g.sent_at_ms = store.now;
    grant = g;
  }

  backend::Reply acquire(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                         int64_t transition_ms, int64_t) override {
    ++acquires;
    backend::Reply r = apply(
        core::Op::acquire, [&] { return store.acquire(mutex, contender, ttl_ms, transition_ms); });
    acquired_at_ms = sys::boottime_ms();
    return r;
  }
  backend::Reply guard(const std::string& mutex, const std::string& contender, uint64_t token,
                       int64_t ttl_ms, int64_t transition_ms, int64_t) override {
    ++guards;
    return apply(core::Op::guard,
                 [&] { return store.guard(mutex, contender, token, ttl_ms, transition_ms); });
  }
  backend::Reply begin_step(const std::string& mutex, const std::string& contender,
                            uint64_t token, int64_t ttl_ms, int64_t transition_ms,
                            int64_t) override {
    ++guards;
    return apply(core::Op::guard, [&] {
      return store.begin_step(mutex, contender, token, ttl_ms, transition_ms);
    });
  }
  backend::Reply hold(const std::string& mutex, const std::string& contender, uint64_t token,
                      int64_t hold_ms, int64_t) override {
    ++holds;
    return apply(core::Op::hold, [&] { return store.hold(mutex, contender, token, hold_ms); });
  }
  // simba renew's, never the driver's.
  backend::Reply extend(const std::string&, const std::string&, uint64_t, int64_t, int64_t,
                        int64_t) override {
    return backend::Reply::failure(backend::Reply::Status::failed, "not the driver's call");
  }
  backend::Reply release(const std::string& mutex, const std::string& contender, uint64_t token,
                         int64_t) override {
    if (++releases == 1) released_at_ms = sys::boottime_ms();
    released_tokens.push_back(token);
    return apply(core::Op::release, [&] { return store.release(mutex, contender, token); });
  }
  backend::Reply force_release(const std::string& mutex, uint64_t token, int64_t) override {
    store.now = sys::boottime_ms();
    return to_reply(store.force_release(mutex, token));
  }
  // The fake keeps no history nor counters: the same as force_release.
  backend::Reply release_lease(const std::string& mutex, uint64_t token, int64_t t) override {
    return force_release(mutex, token, t);
  }
  backend::Reply get(const std::string& mutex, int64_t) override {
    store.now = sys::boottime_ms();
    core::CallResult r;
    r.status = core::CallResult::Status::ok;
    r.observed = {store.lease(mutex), store.now};
    return to_reply(r);
  }
  backend::Listing inspect(const std::string&, int64_t) override { return {}; }

  std::string describe() const override { return "fake://driver"; }

  backend::Wakeups& wakeups(const std::string&, const std::string&) override { return *this; }
  int wait() override {
    ++waits;
    if (on_wait) on_wait();
    return m_timer;
  }
  int own() override {
    ++owns;
    return m_timer;
  }
  void settle() override { ++settles; }
  bool look_after_queueing() const override { return look; }
  backend::Wake wake() override {
    backend::Wake w;
    uint64_t expirations = 0;
    if (::read(m_timer, &expirations, sizeof expirations) != sizeof expirations) return w;
    ++wakes;
    if (on_wake) on_wake();
    w.kind = grant ? backend::Wake::Kind::grant : backend::Wake::Kind::look;
    if (grant) w.grant = *std::exchange(grant, std::nullopt);
    return w;
  }

private:
  template <class F> backend::Reply apply(core::Op op, F f) {
    if (during_call) during_call(op);
    store.now = sys::boottime_ms();
    return to_reply(f());
  }

  static backend::Reply to_reply(const core::CallResult& c) {
    backend::Reply r;
    r.status = c.status == core::CallResult::Status::ok ? backend::Reply::Status::ok
                                                        : backend::Reply::Status::failed;
    r.observed = c.observed;
    r.changed = c.changed;
    r.error = c.error;
    return r;
  }

  int m_timer;
};

} // namespace simba::test
