#pragma once
// --slots N on SQLite (core/slots.hpp: the slot rows and the marker row):
// reading a mutex's slots and keeping its marker, inside the transaction of
// the operation that calls them.
#include "backend/backend.hpp"
#include "backend/sqlite/clocks.hpp"
#include "core/lease.hpp"

#include <string>
#include <vector>

namespace simba::backend::sqlite {

class Connection;

// The marker (the row of `mutex` itself) and slots 0 to slots-1, on the
// boot clock of `c`; each slot's Lease::slot set. An SQLite code.
int read_slots(Connection& db, const std::string& mutex, int slots, const Clocks& c,
               core::Lease& marker, std::vector<core::Lease>& out);

// The slot an acquisition of `contender` takes: the one it holds (a
// renewal), else the first free one; -1 when none is.
int pick_slot(const std::vector<core::Lease>& slots, const std::string& contender, int64_t now);

// The slot that frees first (what a waiter is shown).
int soonest_free(const std::vector<core::Lease>& slots);

// The free slots at `now`: how many, and since when the longest free of
// them is (core/slots.hpp: may_take_free_slot).
struct FreeSlots {
  int count = 0;
  int64_t since = 0;
};
FreeSlots free_slots(const std::vector<core::Lease>& slots, int64_t now);

// What a contender refused a free slot (waiters before it take them) is
// shown: a lease not free before the timed fallback lets it in, so that it
// sleeps until then unless a release wakes it; the holder of the slot that
// frees first, or the marker when none is held.
core::Lease queued_behind(const std::vector<core::Lease>& slots, const FreeSlots& f,
                          const core::Lease& marker, int64_t now);

// After a write to slot row `row`: the marker of its mutex is moved to end
// with the last of its valid slots (to now when none is valid: the mutex is
// free, and the next acquirer's N wins). Nothing when the row has no marker
// of slots. An SQLite code.
int cover_by_marker(Connection& db, const std::string& row, const Clocks& c, int64_t boot_to_wall);

// The marker moved over `slots` (see cover_by_marker), without I/O; how
// many slots are free.
int cover(core::Lease& marker, const std::vector<core::Lease>& slots, int64_t now);

} // namespace simba::backend::sqlite
