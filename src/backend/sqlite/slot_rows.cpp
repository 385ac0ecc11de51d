// --slots N on SQLite (slot_rows.hpp).
#include "backend/sqlite/slot_rows.hpp"

#include "backend/sqlite/connection.hpp"
#include "backend/sqlite/lease_row.hpp"
#include "core/slots.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>

namespace simba::backend::sqlite {

int read_slots(Connection& db, const std::string& mutex, int slots, const Clocks& c,
               core::Lease& marker, std::vector<core::Lease>& out) {
  Row row;
  if (int rc = select_row(db, mutex, row); rc != SQLITE_OK) return rc;
  marker = lease_of(row, c);
  out.assign(size_t(slots), core::Lease{});
  for (int k = 0; k < slots; ++k) {
    Row r;
    if (int rc = select_row(db, core::slot_row(mutex, k), r); rc != SQLITE_OK) return rc;
    out[size_t(k)] = lease_of(r, c);
    out[size_t(k)].slot = k;
  }
  return SQLITE_OK;
}

int pick_slot(const std::vector<core::Lease>& slots, const std::string& contender, int64_t now) {
  for (const core::Lease& l : slots)
    if (l.owned_by(contender, now)) return l.slot;
  for (const core::Lease& l : slots)
    if (l.free_at(now)) return l.slot;
  return -1;
}

int soonest_free(const std::vector<core::Lease>& slots) {
  auto it = std::min_element(slots.begin(), slots.end(), [](const auto& a, const auto& b) {
    return a.transition_at < b.transition_at;
  });
  return it == slots.end() ? 0 : it->slot;
}

FreeSlots free_slots(const std::vector<core::Lease>& slots, int64_t now) {
  FreeSlots f;
  for (const core::Lease& l : slots) {
    if (!l.free_at(now)) continue;
    f.since = f.count == 0 ? l.transition_at : std::min(f.since, l.transition_at);
    ++f.count;
  }
  return f;
}

core::Lease queued_behind(const std::vector<core::Lease>& slots, const FreeSlots& f,
                          const core::Lease& marker, int64_t now) {
  const int64_t fallback_at = f.since + core::k_slot_fallback_ms; // after now: refused
  core::Lease shown = marker;
  shown.transition_at = fallback_at;
  for (const core::Lease& l : slots)
    if (!l.free_at(now) && l.transition_at < shown.transition_at) shown = l;
  shown.ttl_at = std::min(shown.ttl_at, shown.transition_at);
  return shown;
}

int cover_by_marker(Connection& db, const std::string& row, const Clocks& c, int64_t boot_to_wall) {
  const std::string mutex(core::mutex_of_row(row));
  core::Lease marker;
  std::vector<core::Lease> slots;
  Row mrow;
  if (int rc = select_row(db, mutex, mrow); rc != SQLITE_OK) return rc;
  marker = lease_of(mrow, c);
  int n = core::slots_of_owner(marker.owner_id);
  if (n < 2) return SQLITE_OK;
  if (int rc = read_slots(db, mutex, n, c, marker, slots); rc != SQLITE_OK) return rc;
  cover(marker, slots, c.boot);
  return write_row(db, mutex, marker, boot_to_wall, nullptr);
}

int cover(core::Lease& marker, const std::vector<core::Lease>& slots, int64_t now) {
  int free_slots = 0;
  marker.ttl_at = marker.transition_at = now;
  for (const core::Lease& l : slots) {
    if (l.free_at(now)) {
      ++free_slots;
      continue;
    }
    marker.ttl_at = std::max(marker.ttl_at, l.ttl_at);
    marker.transition_at = std::max(marker.transition_at, l.transition_at);
  }
  marker.holding = false;
  return free_slots;
}

} // namespace simba::backend::sqlite
