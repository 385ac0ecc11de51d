// What each SQLite operation decides (lease_rules.hpp).
#include "backend/sqlite/lease_rules.hpp"

#include <algorithm>

namespace simba::backend::sqlite {
namespace {

// Fencing tokens: a new token is max(old + 1, wall_ms * 1000). With
// synchronous=NORMAL a power loss may roll back the last commits, and with
// them the last tokens handed out; seeding from the wall clock in
// microseconds keeps the next token above any token issued before the crash,
// as long as the wall clock does not go backwards (the same reasoning as the
// Redis fence). The wall clock, not the boot clock: that one starts again at
// every boot.
uint64_t next_token(uint64_t old, int64_t now) {
  uint64_t from_clock = now > 0 ? static_cast<uint64_t>(now) * 1000 : 0;
  return std::max(old + 1, from_clock);
}

// release and force_release: token 0 matches any lease (backend.hpp).
bool token_matches(const core::Lease& l, uint64_t token) {
  return token == 0 || l.fencing_token == token;
}

// A released lease has no owner and ended now; the token stays.
void end_lease(Decision& d, int64_t now) {
  d.write = true;
  d.lease.holding = false;
  d.lease.owner_id.clear();
  d.lease.transition_at = now;
  d.lease.ttl_at = std::min(d.lease.ttl_at, now);
}

} // namespace

Decision decide_acquire(const core::Lease& cur, int64_t now, const std::string& contender,
                        int64_t ttl_ms, int64_t transition_ms, int64_t wall_ms) {
  Decision d;
  d.lease = cur;
  d.lease.holding = false; // written only if d.write
  if (cur.free_at(now)) {
    d.write = true;
    d.lease.owner_id = contender;
    d.lease.acquired_at = now;
    d.lease.fencing_token = next_token(cur.fencing_token, wall_ms);
  } else if (cur.owner_id == contender) {
    d.write = true; // renewal keeps acquired_at and the token
  } else {
    return d;
  }
  d.lease.ttl_at = now + ttl_ms;
  d.lease.transition_at = d.lease.ttl_at + transition_ms;
  return d;
}

Decision decide_acquire_once(const core::Lease& cur, int64_t now, const std::string& contender,
                             int64_t ttl_ms, int64_t transition_ms, int64_t wall_ms,
                             const std::optional<core::DoneRecord>& record, int64_t wall_now,
                             const core::OncePer& once, bool& start) {
  start = false;
  // A renewal of a run's lease is not judged.
  bool fresh = cur.free_at(now);
  bool unrecorded =
      !fresh && cur.owned_by(contender, now) && !(record && record->token == cur.fencing_token);
  if (fresh || unrecorded) {
    bool refused = (record && core::terms_differ(*record, once, wall_now)) ||
                   !core::may_run(core::judge_window(record, core::Lease{}, wall_now, once), once);
    if (refused) return fresh ? Decision{false, cur} : decide_release(cur, now, contender, 0);
  }
  Decision d = decide_acquire(cur, now, contender, ttl_ms, transition_ms, wall_ms);
  start = d.write && (fresh || unrecorded);
  return d;
}

Decision decide_renew(const core::Lease& cur, int64_t now, const std::string& contender,
                      uint64_t token, int64_t ttl_ms, int64_t transition_ms, bool holding) {
  Decision d;
  d.lease = cur;
  if (!cur.owned_by(contender, now) || cur.fencing_token != token) return d;
  d.write = true;
  d.lease.ttl_at = now + ttl_ms;
  d.lease.transition_at = d.lease.ttl_at + transition_ms;
  d.lease.holding = holding;
  return d;
}

Decision decide_extend(const core::Lease& cur, int64_t now, const std::string& contender,
                       uint64_t token, int64_t ttl_ms, int64_t transition_ms) {
  if (cur.holding) return decide_renew(cur, now, contender, token, ttl_ms + transition_ms, 0, true);
  Decision d = decide_renew(cur, now, contender, token, ttl_ms, transition_ms, false);
  // A step's CMD runs until the windows its own guard got: never shorter.
  d.lease.ttl_at = std::max(d.lease.ttl_at, cur.ttl_at);
  d.lease.transition_at = std::max(d.lease.transition_at, cur.transition_at);
  return d;
}

Decision decide_begin_step(const core::Lease& cur, int64_t now, const std::string& contender,
                           uint64_t token, int64_t ttl_ms, int64_t transition_ms) {
  if (!cur.holding) { // another step runs under it (or ended without keeping it)
    Decision d;
    d.lease = cur;
    return d;
  }
  return decide_renew(cur, now, contender, token, ttl_ms, transition_ms, false);
}

Decision decide_release(const core::Lease& cur, int64_t now, const std::string& contender,
                        uint64_t token) {
  Decision d;
  d.lease = cur;
  if (!cur.owned_by(contender, now) || !token_matches(cur, token)) return d;
  end_lease(d, now);
  return d;
}

Decision decide_end_revoked(const core::Lease& cur, int64_t now, uint64_t token) {
  Decision d;
  d.lease = cur;
  // Revoked by force_release, with this token; never a quarantine (it has
  // no token of ours).
  if (token == 0 || !cur.revoked_at(now) || cur.quarantine || cur.fencing_token != token) return d;
  end_lease(d, now);
  return d;
}

Decision decide_force_release(const core::Lease& cur, int64_t now, uint64_t token) {
  Decision d;
  d.lease = cur;
  if (!cur.valid_at(now) || !token_matches(cur, token)) return d;
  // Only held (--min-hold): nothing runs under it, it ends now.
  if (cur.holding) {
    end_lease(d, now);
    return d;
  }
  // Revocation: the owner goes, transition_at stays (core/lease.hpp).
  d.write = true;
  d.lease.owner_id.clear();
  d.lease.ttl_at = std::min(cur.ttl_at, now);
  return d;
}

} // namespace simba::backend::sqlite
