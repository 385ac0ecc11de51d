// --slots N on SQLite (slot_rows.hpp).
#include "backend/sqlite/slot_rows.hpp"

#include "backend/sqlite/connection.hpp"
#include "backend/sqlite/lease_row.hpp"
#include "core/slots.hpp"

#include <sqlite3.h>

#include <algorithm>

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

int cover_by_marker(Connection& db, const std::string& row, const Clocks& c, int64_t boot_to_wall,
                    int& free_slots) {
  free_slots = 0;
  const std::string mutex(core::mutex_of_row(row));
  core::Lease marker;
  std::vector<core::Lease> slots;
  Row mrow;
  if (int rc = select_row(db, mutex, mrow); rc != SQLITE_OK) return rc;
  marker = lease_of(mrow, c);
  int n = core::slots_of_owner(marker.owner_id);
  if (n < 2) return SQLITE_OK;
  if (int rc = read_slots(db, mutex, n, c, marker, slots); rc != SQLITE_OK) return rc;
  marker.ttl_at = marker.transition_at = c.boot;
  for (const core::Lease& l : slots) {
    if (l.free_at(c.boot)) {
      ++free_slots;
      continue;
    }
    marker.ttl_at = std::max(marker.ttl_at, l.ttl_at);
    marker.transition_at = std::max(marker.transition_at, l.transition_at);
  }
  marker.holding = false;
  return write_row(db, mutex, marker, boot_to_wall, nullptr);
}

} // namespace simba::backend::sqlite
