// --slots N on SQLite (slot_rows.hpp).
#include "backend/sqlite/slot_rows.hpp"

#include "backend/sqlite/connection.hpp"
#include "backend/sqlite/lease_row.hpp"
#include "core/slots.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

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

void group_slot_rows(std::vector<MutexLease>& mutexes) {
  std::vector<MutexLease> out;
  for (MutexLease& m : mutexes) {
    size_t hash = m.mutex.find('#');
    if (hash == std::string::npos) {
      out.push_back(std::move(m));
      continue;
    }
    std::string base = m.mutex.substr(0, hash);
    if (out.empty() || out.back().mutex != base) continue; // no marker: no slots in use
    // The mutex's counters are its rows' (backend.hpp: MutexLease).
    MutexLease& of = out.back();
    if (m.acquisitions) of.acquisitions = of.acquisitions.value_or(0) + *m.acquisitions;
    if (m.losses) of.losses = of.losses.value_or(0) + *m.losses;
    m.lease.slot = std::atoi(m.mutex.c_str() + hash + 1);
    out.back().slots.push_back({m.lease, m.holder});
  }
  for (MutexLease& m : out) {
    int n = core::slots_of_owner(m.lease.owner_id);
    if (n < 2) {
      m.slots.clear();
      continue;
    }
    std::vector<SlotLease> by_number(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) by_number[size_t(k)].lease.slot = k;
    for (SlotLease& s : m.slots)
      if (s.lease.slot < n) by_number[size_t(s.lease.slot)] = std::move(s);
    m.slots = std::move(by_number);
  }
  mutexes = std::move(out);
}

} // namespace simba::backend::sqlite
