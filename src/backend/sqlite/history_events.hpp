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
  int64_t now = 0;                       // the operation's instant, boot clock
  int64_t boot_to_wall = 0;              // wall minus boot clock (events are on the wall clock)
  std::optional<Holder> holder;          // ours: the acquirer, or who forced
  std::optional<int64_t> queued_at_ms;   // when we joined the queue (epoch ms), if we did
  bool forced = false;                   // a release --force
  std::optional<int> exit_code;          // CMD's, for a release
};

// The events of a write from `cur` to `next`, oldest first, into `out`; how
// many (0 to 2). A new lease (`new_lease`: a new token with an owner) is
// "acquired", after "expired" for a lease that ran out unreleased (its end
// is only seen now, and timed at its end); a lease that ends is "released"
// or "forced". Renewals are no events.
int history_events(const core::Lease& cur, const core::Lease& next, bool new_lease,
                   const EventContext& c, HistoryEvent (&out)[2]);

} // namespace simba::backend::sqlite
