#pragma once
// Which history events a write of the SQLite backend makes (history_table.hpp
// stores them): a pure function of the lease before and after the write.
#include "backend/backend.hpp"
#include "core/lease.hpp"

#include <cstdint>
#include <optional>

namespace simba::backend::sqlite {

// What the operation knows besides the two leases.
struct EventContext {
  int64_t now = 0;                     // the operation's instant, boot clock
  int64_t boot_to_wall = 0;            // wall minus boot clock (events are on the wall clock)
  std::optional<Holder> holder;        // ours: the acquirer, or who forced
  std::optional<int64_t> queued_at_ms; // when we joined the queue (epoch ms), if we did
  bool forced = false;                 // a release --force
  std::optional<int> exit_code;        // CMD's, for a release
};

// The events of a write from `cur` to `next`, oldest first, into `out`; how
// many (0 to 2). A new lease (`new_lease`: a new token with an owner) is
// "acquired", after "expired" for a lease that ran out unreleased (its end
// is only seen now, and timed at its end); a lease that ends is "released"
// or "forced". Renewals are no events.
int history_events(const core::Lease& cur, const core::Lease& next, bool new_lease,
                   const EventContext& c, HistoryEvent (&out)[2]);

// How the same write moves the row's counters (backend.hpp: MutexLease):
// a new lease is an acquisition, and the lease it replaces a loss when it
// ran out unreleased (not one only held, nor one a lost event counted
// already: `lost_token`); a forced release is a loss unless a lost event
// counted it already. Written whatever the history limit.
struct CounterSteps {
  int acquisitions = 0;
  int losses = 0;
};
CounterSteps counter_steps(const core::Lease& cur, const core::Lease& next, bool new_lease,
                           bool forced, uint64_t lost_token);

// record_lost (backend.hpp) on the lease as it stands, `cur`: whether the
// loss of `contender`'s lease `token` is counted, and whether the row notes
// its token. Counted when nothing has counted it yet: the row still shows
// that lease as ours, valid or run out (noted, so that its expiry, written
// by the next acquisition, or a forced release is not counted again), or
// has no trace of it (a token below it: the database lost it). Not counted
// when the row shows it revoked (its forced counted it) or a later lease
// (whose acquisition counted its expiry, or after its forced).
struct LostCount {
  bool counts = false;
  bool note = false;
};
LostCount lost_count(const core::Lease& cur, const std::string& contender, uint64_t token);

} // namespace simba::backend::sqlite
