#pragma once
// What each SQLite operation decides, given the lease as it stands at `now`
// (both on the boot clock): the rules of backend.hpp, without I/O. The
// backend runs each decision inside one write transaction
// (sqlite_backend.cpp) and writes the lease only if `write`.
#include "core/lease.hpp"
#include "core/once_per.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace simba::backend::sqlite {

struct Decision {
  bool write = false;
  core::Lease lease; // the lease after the operation (unchanged if !write)
};

// A free lease becomes `contender`'s, with a new token seeded from the wall
// clock `wall_ms`; its own lease is renewed; another's stays.
Decision decide_acquire(const core::Lease& cur, int64_t now, const std::string& contender,
                        int64_t ttl_ms, int64_t transition_ms, int64_t wall_ms);

// acquire_once: acquire's rule, but a new lease (or ours without a record
// of its own: handed over by a plain release) only when the window holding
// `wall_now` may run (core::judge_window, core::may_run) and no record of
// other terms lasts (core::terms_differ); ours that may not is released.
// `start`: the decision starts a run, whose record the caller writes.
Decision decide_acquire_once(const core::Lease& cur, int64_t now, const std::string& contender,
                             int64_t ttl_ms, int64_t transition_ms, int64_t wall_ms,
                             const std::optional<core::DoneRecord>& record, int64_t wall_now,
                             const core::OncePer& once, bool& start);

// guard and hold: a compare-and-set on owner and token.
Decision decide_renew(const core::Lease& cur, int64_t now, const std::string& contender,
                      uint64_t token, int64_t ttl_ms, int64_t transition_ms, bool holding);

// begin_step: guard's, only of a lease marked as only held (backend.hpp).
Decision decide_begin_step(const core::Lease& cur, int64_t now, const std::string& contender,
                           uint64_t token, int64_t ttl_ms, int64_t transition_ms);

// extend: a renewal that keeps the mark (backend.hpp).
Decision decide_extend(const core::Lease& cur, int64_t now, const std::string& contender,
                       uint64_t token, int64_t ttl_ms, int64_t transition_ms);

Decision decide_release(const core::Lease& cur, int64_t now, const std::string& contender,
                        uint64_t token);

// Backend::end_revoked: the lease revoked (no owner, before its
// transition_at) with fencing token `token` ends now; anything else stays.
Decision decide_end_revoked(const core::Lease& cur, int64_t now, uint64_t token);

// A lease only held (--min-hold) ends now; one CMD runs under is revoked.
Decision decide_force_release(const core::Lease& cur, int64_t now, uint64_t token);

} // namespace simba::backend::sqlite
