#pragma once
// A lease: one ownership record of a mutex, times in epoch milliseconds of the
// backend's clock (DESIGN §1, §2).
#include <cstdint>
#include <string>

namespace simba::core {

struct Lease {
  std::string owner_id; // empty: no owner (the seed's MutexOwner.NONE)
  int64_t acquired_at = 0;
  int64_t ttl_at = 0;
  int64_t transition_at = 0;
  uint64_t fencing_token = 0; // kept after release; 0 = never acquired
  // No owner, and no new lease before transition_at: the backend may have
  // lost a lease whose CMD still runs (Redis after a restart, a failover or
  // a flush). Otherwise like a revoked lease.
  bool quarantine = false;
  // The owner's CMD has ended and the lease is only kept for --min-hold
  // (nothing runs under it): a forced release frees it at once.
  bool holding = false;
  // --slots N: which of the mutex's N slots this lease is (0 to N-1; always
  // 0 for a plain mutex). Set by the CLI from the acquisition (slots.hpp).
  int slot = 0;

  // A lease is valid (someone owns it) while transition_at has not passed.
  bool valid_at(int64_t now) const { return !owner_id.empty() && now < transition_at; }
  // Anyone may acquire once transition_at has passed. A release sets
  // transition_at to its time; a forced release (revocation) removes the
  // owner but keeps transition_at, so nobody else acquires before the old
  // owner's CMD is surely stopped.
  bool free_at(int64_t now) const { return now >= transition_at; }
  bool revoked_at(int64_t now) const { return owner_id.empty() && now < transition_at; }
  bool owned_by(const std::string& contender, int64_t now) const {
    return valid_at(now) && owner_id == contender;
  }
};

enum class Window { ttl, transition, revoked, quarantine, idle };

inline Window window_at(const Lease& lease, int64_t now) {
  if (lease.free_at(now)) return Window::idle;
  if (lease.revoked_at(now)) return lease.quarantine ? Window::quarantine : Window::revoked;
  return now < lease.ttl_at ? Window::ttl : Window::transition;
}

inline const char* window_name(Window w) {
  switch (w) {
  case Window::ttl: return "held";
  case Window::transition: return "transition";
  case Window::revoked: return "revoked";
  case Window::quarantine: return "quarantine";
  case Window::idle: return "free";
  }
  return "?";
}

// The lease as a backend operation left it, with the backend's clock at that
// moment. Every delay is computed from `now`, never from the local wall clock.
struct Observed {
  Lease lease;
  int64_t now = 0;
};

// Whether `o` shows the lease of `owner_id` with fencing token `token`,
// still valid: the test of a lease known by its handle (simba acquire).
inline bool holds_lease(const Observed& o, const std::string& owner_id, uint64_t token) {
  return o.lease.owned_by(owner_id, o.now) && o.lease.fencing_token == token;
}

// Why `o` does not show the lease with fencing token `token`, for one line.
inline std::string why_not_held(const Observed& o, uint64_t token) {
  if (o.lease.revoked_at(o.now)) return "it was revoked (release --force)";
  if (!o.lease.valid_at(o.now)) return "it expired or was released";
  return "the mutex now has another lease (fencing token " + std::to_string(o.lease.fencing_token) +
         (o.lease.fencing_token == token ? ", another owner" : "") + ")";
}

} // namespace simba::core
