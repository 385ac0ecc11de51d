// simba renew on a real SQLite database: its renewal is one atomic call, so
// a step (run --lease) that starts while renew runs is never marked as only
// held (Lease::holding), which a forced release would free at once while
// the step's CMD still runs (DESIGN §4).
#include "backend/backend.hpp"
#include "cli/lease.hpp"
#include "core/lease_handle.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <unistd.h>
#include <utility>

namespace simba {
namespace {

using backend::Backend;
using backend::Reply;

constexpr int64_t k_timeout = 5000;

// Runs `between` once, right after the first call it forwards returns: a
// step starting between renew's calls, were there two (a read, then a write).
class StepStartsBetweenCalls final : public Backend {
public:
  StepStartsBetweenCalls(Backend& inner, std::function<void()> between)
      : m_inner(inner), m_between(std::move(between)) {}

  Reply acquire(const std::string& m, const std::string& c, int64_t ttl, int64_t tr,
                int64_t t) override {
    return after(m_inner.acquire(m, c, ttl, tr, t));
  }
  Reply guard(const std::string& m, const std::string& c, uint64_t token, int64_t ttl, int64_t tr,
              int64_t t) override {
    return after(m_inner.guard(m, c, token, ttl, tr, t));
  }
  Reply begin_step(const std::string& m, const std::string& c, uint64_t token, int64_t ttl,
                   int64_t tr, int64_t t) override {
    return after(m_inner.begin_step(m, c, token, ttl, tr, t));
  }
  Reply hold(const std::string& m, const std::string& c, uint64_t token, int64_t hold_ms,
             int64_t t) override {
    return after(m_inner.hold(m, c, token, hold_ms, t));
  }
  Reply extend(const std::string& m, const std::string& c, uint64_t token, int64_t ttl, int64_t tr,
               int64_t t) override {
    return after(m_inner.extend(m, c, token, ttl, tr, t));
  }
  Reply release(const std::string& m, const std::string& c, uint64_t token, int64_t t) override {
    return after(m_inner.release(m, c, token, t));
  }
  Reply force_release(const std::string& m, uint64_t token, int64_t t) override {
    return after(m_inner.force_release(m, token, t));
  }
  Reply release_lease(const std::string& m, uint64_t token, int64_t t) override {
    return after(m_inner.release_lease(m, token, t));
  }
  Reply get(const std::string& m, int64_t t) override { return after(m_inner.get(m, t)); }
  backend::Listing inspect(const std::string& m, int64_t t) override {
    return m_inner.inspect(m, t);
  }
  std::string describe() const override { return m_inner.describe(); }

private:
  Reply after(Reply r) {
    if (m_between) std::exchange(m_between, nullptr)();
    return r;
  }
  Backend& m_inner;
  std::function<void()> m_between;
};

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/simba-renew-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

} // namespace

TEST_CASE("renew: a step starting while renew runs stays guarded; a forced release revokes it") {
  TempDir dir;
  auto b = backend::open_backend("sqlite://" + dir.path + "/simba.db");
  const std::string m = "job";
  // simba acquire: the lease, kept between steps (marked as only held).
  Reply a = b->acquire(m, "owner", 60000, 2000, k_timeout);
  REQUIRE(a.changed);
  core::LeaseHandle h{core::backend_fingerprint(b->describe()), m,     "owner",
                      a.observed.lease.fencing_token,           60000, 2000};
  REQUIRE(b->hold(m, h.owner_id, h.token, 62000, k_timeout).observed.lease.holding);

  // renew, while a step's first guard (run --lease: its CMD starts next)
  // lands between renew's calls, should it make more than one.
  StepStartsBetweenCalls racing(*b, [&] {
    Reply step = b->guard(m, h.owner_id, h.token, 60000, 2000, k_timeout);
    REQUIRE(step.changed);
    REQUIRE_FALSE(step.observed.lease.holding);
  });
  Reply r = cli::renew_lease(racing, h, 120000);
  CHECK(r.changed);

  // The step's CMD runs: the lease must say so, and a forced release (or
  // release --lease) must revoke it, never free it at once.
  Reply now = b->get(m, k_timeout);
  CHECK(now.observed.lease.owned_by(h.owner_id, now.observed.now));
  CHECK_FALSE(now.observed.lease.holding);
  Reply f = b->force_release(m, h.token, k_timeout);
  CHECK(f.changed);
  CHECK(f.observed.lease.revoked_at(f.observed.now));
  CHECK_FALSE(b->acquire(m, "next job", 60000, 2000, k_timeout).changed);
}

TEST_CASE("renew: a lease between steps stays marked as only held; a guarded one is never "
          "shortened") {
  TempDir dir;
  auto b = backend::open_backend("sqlite://" + dir.path + "/simba.db");
  Reply a = b->acquire("kept", "owner", 60000, 2000, k_timeout);
  core::LeaseHandle h{core::backend_fingerprint(b->describe()), "kept", "owner",
                      a.observed.lease.fencing_token,           60000,  2000};
  REQUIRE(b->hold("kept", "owner", h.token, 62000, k_timeout).changed);
  Reply kept = cli::renew_lease(*b, h, 1000);
  CHECK(kept.changed);
  CHECK(kept.observed.lease.holding);
  CHECK(kept.observed.lease.transition_at - kept.observed.now == 3000); // ttl + transition

  // A step guards it for 60 s: a renew --ttl 1s must not end it before.
  Reply step = b->guard("kept", "owner", h.token, 60000, 2000, k_timeout);
  Reply renewed = cli::renew_lease(*b, h, 1000);
  CHECK_FALSE(renewed.observed.lease.holding);
  CHECK(renewed.observed.lease.ttl_at >= step.observed.lease.ttl_at);
  CHECK(renewed.observed.lease.transition_at >= step.observed.lease.transition_at);
}

} // namespace simba
