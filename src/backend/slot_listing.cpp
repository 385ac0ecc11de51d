// --slots N in a listing (slot_listing.hpp).
#include "backend/slot_listing.hpp"

#include "core/slots.hpp"

#include <cstdlib>
#include <string>

namespace simba::backend {

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

} // namespace simba::backend
