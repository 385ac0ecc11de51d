// The forms of `simba status` (status_view.hpp).
#include "cli/status_view.hpp"

#include "core/duration.hpp"
#include "core/names.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace simba::cli {
namespace {

using backend::Holder;
using backend::MutexLease;
using nlohmann::json;

json host_json(const std::optional<Holder>& h) { return h ? json(h->host) : json(nullptr); }
json pid_json(const std::optional<Holder>& h) { return h ? json(h->pid) : json(nullptr); }
json command_json(const std::optional<Holder>& h) {
  return h && !h->command.empty() ? json(h->command) : json(nullptr);
}

json holder_json(const core::Lease& l, const std::optional<Holder>& holder) {
  json j;
  j["owner"] = l.owner_id;
  j["label"] = std::string(core::label_of(l.owner_id));
  j["host"] = host_json(holder);
  j["pid"] = pid_json(holder);
  j["command"] = command_json(holder);
  j["via"] = holder ? json(holder->via) : json(nullptr);
  j["slot"] = l.slot;
  j["fencing_token"] = l.fencing_token;
  j["acquired_at"] = l.acquired_at;
  j["lease_end"] = l.transition_at;
  return j;
}

json waiter_json(const backend::Waiter& w, size_t position) {
  json j;
  j["position"] = position;
  j["owner"] = w.owner_id;
  j["label"] = std::string(core::label_of(w.owner_id));
  j["host"] = host_json(w.holder);
  j["pid"] = pid_json(w.holder);
  j["command"] = command_json(w.holder);
  j["since"] = w.since;
  j["gives_up_at"] = w.gives_up_at ? json(*w.gives_up_at) : json(nullptr);
  return j;
}

// The fields of the first wave's status (kept as they were), then holders
// and waiters (lists: a mutex with slots will have several holders).
json mutex_json(const MutexLease& m, int64_t now) {
  const core::Lease& l = m.lease;
  core::Window w = core::window_at(l, now);
  // With slots the lease is the marker (core/slots.hpp): its holders are
  // the slots'.
  bool owned = !l.owner_id.empty() && w != core::Window::idle && m.slots.empty();
  json j;
  j["mutex"] = m.mutex;
  j["state"] = state_name(m, now);
  j["owner"] = owned ? json(l.owner_id) : json(nullptr);
  j["label"] = owned ? json(std::string(core::label_of(l.owner_id))) : json(nullptr);
  j["fencing_token"] = l.fencing_token;
  bool acquired = w != core::Window::idle && w != core::Window::quarantine;
  j["acquired_at"] = acquired ? json(l.acquired_at) : json(nullptr);
  j["ttl_at"] = w == core::Window::idle ? json(nullptr) : json(l.ttl_at);
  j["transition_at"] = w == core::Window::idle ? json(nullptr) : json(l.transition_at);
  j["ttl_remaining_ms"] = w == core::Window::ttl ? l.ttl_at - now : 0;
  j["transition_remaining_ms"] = w == core::Window::idle ? 0 : l.transition_at - now;
  // false: no simba process guards it (simba acquire's lease between
  // steps, or --min-hold after CMD): nothing runs under it.
  j["guarded"] = owned ? json(!l.holding) : json(nullptr);
  j["holders"] = json::array();
  if (owned) j["holders"].push_back(holder_json(l, m.holder));
  for (const backend::SlotLease& slot : m.slots)
    if (slot.lease.valid_at(now)) j["holders"].push_back(holder_json(slot.lease, slot.holder));
  j["slots"] = m.slots.empty() ? 1 : m.slots.size();
  j["slots_used"] = used_slots(m, now);
  j["waiters"] = json::array();
  for (size_t i = 0; i < m.waiters.size(); ++i)
    j["waiters"].push_back(waiter_json(m.waiters[i], i + 1));
  // The counters (backend.hpp: MutexLease), null when not kept.
  j["acquisitions"] = m.acquisitions ? json(*m.acquisitions) : json(nullptr);
  j["losses"] = m.losses ? json(*m.losses) : json(nullptr);
  return j;
}

json done_json(const core::DoneRecord& d) {
  json j;
  j["window_start"] = d.window_start;
  j["label"] = d.label;
  j["host"] = d.host;
  j["fencing_token"] = d.token;
  j["started_at"] = d.started_at;
  j["late_ms"] = core::lateness(d); // > 0: started after its window's end
  j["finished_at"] = d.finished ? json(d.finished_at) : json(nullptr);
  j["exit_code"] = d.finished ? json(d.exit_code) : json(nullptr);
  return j;
}

// An OpenMetrics label value: backslash, double quote and newline escaped.
std::string label_value(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

} // namespace

std::string state_name(const MutexLease& m, int64_t now) {
  const core::Lease& l = m.lease;
  core::Window w = core::window_at(l, now);
  if (w != core::Window::ttl || !l.holding) return core::window_name(w);
  // Only kept, nothing runs under it: simba acquire's lease between its
  // steps, or --min-hold after CMD ended.
  return m.holder && m.holder->via == "acquire" ? "leased" : "holding";
}

size_t used_slots(const MutexLease& m, int64_t now) {
  if (m.slots.empty()) return m.lease.valid_at(now) ? 1 : 0;
  return size_t(std::count_if(m.slots.begin(), m.slots.end(),
                              [&](const backend::SlotLease& s) { return s.lease.valid_at(now); }));
}

void print_status_json(std::ostream& out, const backend::Listing& listing,
                       const DoneRecords& done) {
  json j;
  j["schema"] = 1;
  j["backend_now"] = listing.now;
  j["holders_kept"] = listing.holders_kept;
  j["waiters_kept"] = listing.waiters_kept;
  j["mutexes"] = json::array();
  for (const MutexLease& m : listing.mutexes) {
    j["mutexes"].push_back(mutex_json(m, listing.now));
    if (auto d = done.find(m.mutex); d != done.end())
      j["mutexes"].back()["last_once_per_run"] = done_json(d->second);
  }
  out << j.dump() << '\n';
}

// OpenMetrics text (node_exporter's textfile collector, any scraper): one
// gauge family per fact, every sample labelled with its mutex; then the
// counters (a family named without its _total, each sample with it), for
// the mutexes whose backend keeps them.
void print_status_openmetrics(std::ostream& out, const backend::Listing& listing, bool prometheus) {
  int64_t now = listing.now;
  struct Family {
    const char* name;
    const char* help;
    double (*value)(const MutexLease&, int64_t);
    const char* format; // integers exactly, seconds to the millisecond
  };
  static const Family families[] = {
      {"simba_mutex_held", "1 while the mutex is not free (held, revoked or quarantined)",
       [](const MutexLease& m, int64_t t) { return m.lease.free_at(t) ? 0.0 : 1.0; }, "%.0f"},
      {"simba_mutex_waiters", "Contenders in the mutex's queue of waiters",
       [](const MutexLease& m, int64_t) { return double(m.waiters.size()); }, "%.0f"},
      {"simba_mutex_lease_remaining_seconds", "Seconds until the mutex is free, 0 when it is",
       [](const MutexLease& m, int64_t t) {
         return m.lease.free_at(t) ? 0.0 : double(m.lease.transition_at - t) / 1000.0;
       },
       "%.3f"},
      {"simba_mutex_slots", "How many holders the mutex may have at once (--slots)",
       [](const MutexLease& m, int64_t) { return m.slots.empty() ? 1.0 : double(m.slots.size()); },
       "%.0f"},
      {"simba_mutex_slots_used", "How many of its slots hold a lease",
       [](const MutexLease& m, int64_t t) { return double(used_slots(m, t)); }, "%.0f"},
      {"simba_mutex_fencing_token", "The fencing token of the mutex's last lease",
       [](const MutexLease& m, int64_t) { return double(m.lease.fencing_token); }, "%.0f"},
  };
  for (const Family& f : families) {
    out << "# TYPE " << f.name << " gauge\n# HELP " << f.name << ' ' << f.help << '\n';
    for (const MutexLease& m : listing.mutexes) {
      char value[64];
      std::snprintf(value, sizeof value, f.format, f.value(m, now));
      out << f.name << "{mutex=\"" << label_value(m.mutex) << "\"} " << value << '\n';
    }
  }
  struct Counter {
    const char* name;
    const char* help;
    const std::optional<int64_t> MutexLease::*value;
  };
  static const Counter counters[] = {
      {"simba_mutex_acquisitions", "New leases of the mutex (acquired or handed over)",
       &MutexLease::acquisitions},
      {"simba_mutex_losses",
       "Leases of the mutex that ended without their owner's release (forced, expired, lost)",
       &MutexLease::losses},
  };
  for (const Counter& c : counters) {
    std::string family = std::string(c.name) + (prometheus ? "_total" : "");
    out << "# TYPE " << family << " counter\n# HELP " << family << ' ' << c.help << '\n';
    for (const MutexLease& m : listing.mutexes)
      if (const std::optional<int64_t>& v = m.*c.value)
        out << c.name << "_total{mutex=\"" << label_value(m.mutex) << "\"} " << *v << '\n';
  }
  if (!prometheus) out << "# EOF\n";
}

} // namespace simba::cli
