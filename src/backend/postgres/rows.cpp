#include "backend/postgres/rows.hpp"

#include "backend/holder.hpp"
#include "backend/slot_listing.hpp"
#include "core/slots.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace simba::backend::pg {

int64_t number(const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); }

core::Lease read_lease(const Row& row, size_t at) {
  core::Lease l;
  l.owner_id = row[at];
  l.acquired_at = number(row[at + 1]);
  l.ttl_at = number(row[at + 2]);
  l.transition_at = number(row[at + 3]);
  l.fencing_token = static_cast<uint64_t>(number(row[at + 4]));
  l.holding = row[at + 5] == "t";
  return l;
}

core::DoneRecord read_done(const Row& row, size_t at) {
  core::DoneRecord d;
  d.window_start = number(row[at]);
  d.label = row[at + 1];
  d.host = row[at + 2];
  d.token = static_cast<uint64_t>(number(row[at + 3]));
  d.started_at = number(row[at + 4]);
  d.finished = row[at + 5] == "t";
  d.exit_code = static_cast<int>(number(row[at + 6]));
  d.finished_at = number(row[at + 7]);
  d.period_ms = number(row[at + 8]); // "" (NULL, an older simba's record): 0
  d.offset_ms = number(row[at + 9]);
  return d;
}

void show_quarantine(core::Lease& l, int64_t now, int64_t till) {
  if (till <= now || !l.free_at(now)) return;
  l.owner_id.clear();
  l.ttl_at = now;
  l.transition_at = std::max(l.transition_at, till);
  l.quarantine = true;
}

Listing read_listing(const std::vector<Row>& rows, const std::string& mutex) {
  Listing out;
  out.holders_kept = out.waiters_kept = true;
  for (const Row& row : rows) {
    if (row.size() != 13) {
      out.error = "unexpected answer from PostgreSQL";
      out.mutexes.clear();
      return out;
    }
    out.now = number(row[0]);
    if (row[3].empty()) continue; // nothing leased yet: the clock only
    std::optional<Holder> holder;
    if (!row[10].empty()) holder = decode_holder(row[10]);
    if (row[2] == "0") {
      MutexLease m;
      m.mutex = row[3];
      m.lease = read_lease(row, 4);
      show_quarantine(m.lease, out.now, number(row[1]));
      m.holder = std::move(holder);
      m.acquisitions = number(row[11]);
      m.losses = number(row[12]);
      out.mutexes.push_back(std::move(m));
    } else if (!out.mutexes.empty() && out.mutexes.back().mutex == row[3]) {
      // No give-up time: it would need a column of the waiters' table.
      out.mutexes.back().waiters.push_back({row[4], number(row[5]), std::move(holder), {}});
    }
  }
  group_slot_rows(out.mutexes);
  // A mutex never acquired has no row: free, as get() shows it.
  if (!mutex.empty() && out.mutexes.empty()) {
    MutexLease free;
    free.mutex = mutex;
    free.acquisitions = free.losses = 0;
    out.mutexes.push_back(std::move(free));
  }
  out.ok = true;
  return out;
}

History read_history(const std::vector<Row>& rows) {
  History h;
  h.kept = true;
  auto optional = [](const std::string& v) {
    return v.empty() ? std::nullopt : std::optional<int64_t>(number(v));
  };
  for (const Row& row : rows) {
    if (row.size() != 12) {
      h.error = "unexpected answer from PostgreSQL";
      h.events.clear();
      return h;
    }
    h.now = number(row[0]);
    if (row[1].empty()) continue; // no event: the clock only
    HistoryEvent e;
    e.mutex = std::string(core::mutex_of_row(row[1])); // a slot's ("m#k"): its mutex's
    e.at = number(row[2]);
    e.event = row[3];
    e.owner_id = row[4];
    if (!row[5].empty()) e.holder = decode_holder(row[5]);
    e.token = static_cast<uint64_t>(number(row[6]));
    if (!row[7].empty()) e.exit_code = static_cast<int>(number(row[7]));
    e.held_ms = optional(row[8]);
    e.waited_ms = optional(row[9]);
    e.reason = row[10];
    e.by = row[11];
    h.events.push_back(std::move(e));
  }
  h.ok = true;
  return h;
}

} // namespace simba::backend::pg
