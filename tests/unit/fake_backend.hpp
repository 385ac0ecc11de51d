#pragma once
// An in-memory backend with the acquisition rule of DESIGN §2, on a clock the
// test sets: the fake of the contend tests and the simulation.
#include "core/contender.hpp"
#include "core/slots.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace simba::test {

class FakeBackend {
public:
  int64_t now = 1'700'000'000'000; // backend clock (epoch ms)
  // Tokens never below the clock in microseconds, as the Redis backend
  // seeds them: they keep increasing when the counter is lost.
  bool clock_seeded_tokens = false;
  // Op::waiters' answer: the others in the mutex's queue (nullopt: not known).
  std::optional<int> waiters = 0;

  core::CallResult acquire(const std::string& mutex, const std::string& who, int64_t ttl,
                           int64_t transition) {
    core::Lease& l = m_leases[mutex];
    bool mine = l.owned_by(who, now);
    core::CallResult r = ok(l);
    if (l.free_at(now) || mine) {
      if (!mine) {
        l.owner_id = who;
        l.acquired_at = now;
        l.fencing_token = next_token();
      }
      l.ttl_at = now + ttl;
      l.transition_at = l.ttl_at + transition;
      l.holding = false;
      r = ok(l);
      r.changed = true;
    }
    return r;
  }

  // --slots n (backend.hpp: acquire_slot): the slot `who` holds renewed,
  // else the first free one taken with a new token (one counter for all
  // slots), else the slot that frees first, unchanged. Lease::slot says
  // which; slot k is the lease of core::slot_row(mutex, k).
  core::CallResult acquire_slot(const std::string& mutex, const std::string& who, int n,
                                int64_t ttl, int64_t transition) {
    int pick = -1, soonest = 0;
    for (int k = n - 1; k >= 0; --k) {
      const core::Lease& l = m_leases[core::slot_row(mutex, k)];
      if (l.free_at(now)) pick = k;
      if (l.transition_at <= m_leases[core::slot_row(mutex, soonest)].transition_at) soonest = k;
    }
    for (int k = 0; k < n; ++k)
      if (m_leases[core::slot_row(mutex, k)].owned_by(who, now)) pick = k;
    core::CallResult r = pick < 0 ? ok(m_leases[core::slot_row(mutex, soonest)])
                                  : acquire(core::slot_row(mutex, pick), who, ttl, transition);
    r.observed.lease.slot = pick < 0 ? soonest : pick;
    return r;
  }

  // A compare-and-set on owner and token, as the real backends do.
  core::CallResult guard(const std::string& mutex, const std::string& who, uint64_t token,
                         int64_t ttl, int64_t transition) {
    core::Lease& l = m_leases[mutex];
    if (!l.owned_by(who, now) || l.fencing_token != token) return ok(l);
    return acquire(mutex, who, ttl, transition);
  }

  // A step's first guard: only of a lease marked as only held.
  core::CallResult begin_step(const std::string& mutex, const std::string& who, uint64_t token,
                              int64_t ttl, int64_t transition) {
    core::Lease& l = m_leases[mutex];
    if (!l.holding) return ok(l);
    core::CallResult r = guard(mutex, who, token, ttl, transition);
    if (r.changed) r.observed.lease.holding = m_leases[mutex].holding = false;
    return r;
  }

  // A guard for --min-hold: no transition, and the lease marked as only
  // held (a forced release frees it at once).
  core::CallResult hold(const std::string& mutex, const std::string& who, uint64_t token,
                        int64_t hold_ms) {
    core::CallResult r = guard(mutex, who, token, hold_ms, 0);
    if (r.changed) r.observed.lease.holding = m_leases[mutex].holding = true;
    return r;
  }

  // `token` 0: whatever lease `who` owns (backend.hpp).
  core::CallResult release(const std::string& mutex, const std::string& who, uint64_t token = 0) {
    core::Lease& l = m_leases[mutex];
    if (!l.owned_by(who, now) || (token != 0 && l.fencing_token != token)) return ok(l);
    l.owner_id.clear();
    l.transition_at = l.ttl_at = now;
    l.holding = false;
    core::CallResult r = ok(l);
    r.changed = true;
    return r;
  }

  // Revocation; with `token` not 0, only of the lease with that token. A
  // lease only held (--min-hold) ends at once: nothing runs under it.
  core::CallResult force_release(const std::string& mutex, uint64_t token = 0) {
    core::Lease& l = m_leases[mutex];
    bool was = l.valid_at(now) && (token == 0 || l.fencing_token == token);
    if (was) {
      l.owner_id.clear();
      l.ttl_at = std::min(l.ttl_at, now);
      if (l.holding) l.transition_at = now;
      l.holding = false;
    }
    core::CallResult r = ok(l);
    r.changed = was;
    return r;
  }

  // The revoked lease with `token` ends now (backend.hpp: end_revoked).
  core::CallResult end_revoked(const std::string& mutex, uint64_t token) {
    core::Lease& l = m_leases[mutex];
    bool ends = token != 0 && l.revoked_at(now) && !l.quarantine && l.fencing_token == token;
    if (ends) l.transition_at = l.ttl_at = now;
    core::CallResult r = ok(l);
    r.changed = ends;
    return r;
  }

  // Tests only: the server lost the lease (a quarantine: no owner, no new
  // lease for `ms`); the token shown stays, the worst case for a check.
  void quarantine(const std::string& mutex, int64_t ms) {
    core::Lease& l = m_leases[mutex];
    l.owner_id.clear();
    l.quarantine = true;
    l.ttl_at = now;
    l.transition_at = now + ms;
  }

  // Tests only: another contender takes the mutex over, whatever it holds.
  void steal(const std::string& mutex, const std::string& who, int64_t ttl, int64_t transition) {
    core::Lease& l = m_leases[mutex];
    l.owner_id = who;
    l.acquired_at = now;
    l.fencing_token = ++m_token;
    l.ttl_at = now + ttl;
    l.transition_at = l.ttl_at + transition;
  }

  core::CallResult apply(const std::string& mutex, const std::string& who,
                         const core::action::Call& a) {
    switch (a.op) {
    case core::Op::acquire: return acquire(mutex, who, a.ttl_ms, a.transition_ms);
    case core::Op::guard:
      if (a.step_start) return begin_step(mutex, who, a.token, a.ttl_ms, a.transition_ms);
      return guard(mutex, who, a.token, a.ttl_ms, a.transition_ms);
    case core::Op::hold: return hold(mutex, who, a.token, a.ttl_ms);
    case core::Op::release: return release(mutex, who, a.token);
    case core::Op::waiters: {
      core::CallResult r = ok(m_leases[mutex]);
      r.waiters = waiters;
      return r;
    }
    }
    return {};
  }

  const core::Lease& lease(const std::string& mutex) { return m_leases[mutex]; }

private:
  uint64_t next_token() {
    m_token = clock_seeded_tokens ? std::max(m_token + 1, uint64_t(now) * 1000) : m_token + 1;
    return m_token;
  }
  core::CallResult ok(const core::Lease& l) const {
    core::CallResult r;
    r.status = core::CallResult::Status::ok;
    r.observed.lease = l;
    r.observed.now = now;
    return r;
  }

  std::map<std::string, core::Lease> m_leases;
  uint64_t m_token = 0;
};

} // namespace simba::test
