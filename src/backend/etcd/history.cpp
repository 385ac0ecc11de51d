// The history and counters of the etcd backend (README.md "History").
// Each mutex has one record key "<prefix>!e/<mutex>" (its event count, its
// counters, and the leases whose end is not written yet) and a ring of
// history_limit() event keys "<prefix>!h/<mutex>|<place>", place = the
// event's number modulo the limit. An event is written with the record in
// one transaction that compares the record's mod revision as read (tried
// again when another writer came first): the ring overwrites the oldest
// event and deletes places past a lowered limit in the same step. None of
// these keys has a lease; simba never deletes a record.
// An acquisition of a free mutex writes its event, unnumbered, in the
// transaction that queues it ("<prefix>!p/<mutex>|<lease>": the record is
// not read yet then); the next write of the record numbers it and deletes
// it, most often the owner's release, which writes its own event in the
// transaction that deletes its key. So an uncontended run writes history
// in no call of its own.
#include "backend/etcd/backend_class.hpp"

#include "backend/history.hpp"
#include "backend/holder.hpp"
#include "sys/clock.hpp"

#include <algorithm>
#include <cstdio>

namespace simba::backend::etcd {
namespace {

std::string place(int64_t n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%07lld", static_cast<long long>(n));
  return buf;
}

// The end of the range of keys that start with `from`.
std::string end_of(std::string from) {
  from.back() = static_cast<char>(from.back() + 1);
  return from;
}

nlohmann::json encode_event(const HistoryEvent& e, int64_t seq) {
  nlohmann::json j = {{"n", seq}, {"e", e.event}, {"at", e.at}, {"o", e.owner_id},
                      {"t", e.token}};
  if (e.holder) j["h"] = encode_holder(*e.holder);
  if (e.exit_code) j["x"] = *e.exit_code;
  if (e.held_ms) j["hm"] = *e.held_ms;
  if (e.waited_ms) j["w"] = *e.waited_ms;
  if (!e.reason.empty()) j["r"] = e.reason;
  if (!e.by.empty()) j["b"] = e.by;
  return j;
}

HistoryEvent decode_event(const nlohmann::json& j, const std::string& mutex) {
  HistoryEvent e;
  e.mutex = mutex;
  e.event = text(j, "e");
  e.at = number(j, "at");
  e.owner_id = text(j, "o");
  e.token = uint64_t(number(j, "t"));
  if (j.contains("h") && j["h"].is_string()) e.holder = decode_holder(j["h"].get<std::string>());
  if (j.contains("x")) e.exit_code = int(number(j, "x"));
  if (j.contains("hm")) e.held_ms = number(j, "hm");
  if (j.contains("w")) e.waited_ms = number(j, "w");
  e.reason = text(j, "r");
  e.by = text(j, "b");
  return e;
}

// The keys of the n-th range of a txn answer, raw.
const nlohmann::json& range_kvs(const nlohmann::json& txn, size_t n) {
  static const nlohmann::json none = nlohmann::json::array();
  if (!txn.contains("responses") || !txn["responses"].is_array() || txn["responses"].size() <= n)
    return none;
  const nlohmann::json& r = txn["responses"][n];
  if (!r.contains("response_range") || !r["response_range"].contains("kvs") ||
      !r["response_range"]["kvs"].is_array())
    return none;
  return r["response_range"]["kvs"];
}

} // namespace

std::string EtcdBackend::record_key(const std::string& mutex) const {
  return etcd::record_key(m_uri.prefix, mutex);
}

std::string EtcdBackend::events_prefix(const std::string& mutex) const {
  return m_uri.prefix + "!h/" + mutex + (mutex.empty() ? "" : "|");
}

EtcdBackend::HistoryRecord EtcdBackend::decode_record(const nlohmann::json& j) {
  HistoryRecord r;
  r.seq = number(j, "s");
  r.acquisitions = number(j, "a");
  r.losses = number(j, "l");
  if (j.contains("open") && j["open"].is_object())
    for (auto it = j["open"].begin(); it != j["open"].end(); ++it) {
      OpenLease o;
      o.owner = text(*it, "o");
      o.holder = text(*it, "h");
      o.at = number(*it, "at");
      o.counted = number(*it, "c") != 0;
      o.holding = number(*it, "k") != 0;
      r.open[uint64_t(std::strtoull(it.key().c_str(), nullptr, 10))] = o;
    }
  return r;
}

nlohmann::json EtcdBackend::encode_record(const HistoryRecord& r) {
  nlohmann::json open = nlohmann::json::object();
  for (const auto& [token, o] : r.open) {
    nlohmann::json j = {{"o", o.owner}, {"at", o.at}};
    if (!o.holder.empty()) j["h"] = o.holder;
    if (o.counted) j["c"] = 1;
    if (o.holding) j["k"] = 1;
    open[std::to_string(token)] = j;
  }
  return {{"s", r.seq}, {"a", r.acquisitions}, {"l", r.losses}, {"open", open}};
}

// The writes of `events` (numbered on from `r`, which they update) and of
// the record `r` then (`value`): the ring's places, those past a lowered
// limit deleted.
nlohmann::json EtcdBackend::history_ops(const std::string& mutex, HistoryRecord& r,
                                        std::vector<HistoryEvent>& events,
                                        std::string& value) const {
  const int64_t limit = history_limit();
  nlohmann::json ops = nlohmann::json::array();
  for (HistoryEvent& e : events) {
    e.mutex = mutex;
    int64_t seq = ++r.seq;
    if (limit == 0) continue;
    ops.push_back({{"request_put",
                    {{"key", base64(events_prefix(mutex) + place((seq - 1) % limit))},
                     {"value", base64(encode_event(e, seq).dump())}}}});
  }
  if (limit > 0 && !events.empty()) // the places past a lowered limit
    ops.push_back({{"request_delete_range",
                    {{"key", base64(events_prefix(mutex) + place(limit))},
                     {"range_end", base64(end_of(events_prefix(mutex)))}}}});
  value = encode_record(r).dump();
  ops.push_back(
      {{"request_put", {{"key", base64(record_key(mutex))}, {"value", base64(value)}}}});
  return ops;
}

nlohmann::json EtcdBackend::record_unchanged(const std::string& mutex, int64_t mod) const {
  return {{"target", "MOD"}, {"result", "EQUAL"}, {"key", base64(record_key(mutex))},
          {"mod_revision", std::to_string(mod)}};
}

std::string EtcdBackend::pending_event(const std::string& contender, uint64_t token, int64_t at,
                                       int64_t waited_ms) const {
  HistoryEvent e = event_of("acquired", contender, token, m_holder);
  e.at = at;
  e.waited_ms = std::max<int64_t>(waited_ms, 0);
  return encode_event(e, 0).dump();
}

bool EtcdBackend::fold_pending(HistoryRecord& r, const std::vector<Store::Pending>& pending,
                               uint64_t skip, std::vector<HistoryEvent>& out) {
  bool folded = false;
  for (const Store::Pending& p : pending) { // in token order
    nlohmann::json j = parse_json(p.value);
    if (p.token == skip || r.open.count(p.token) || !j.is_object()) continue;
    HistoryEvent e = decode_event(j, "");
    e.token = p.token; // Store::Pending's
    out.push_back(e);
    ++r.acquisitions;
    r.open[p.token] = OpenLease{e.owner_id, text(j, "h"), e.at, false, false};
    folded = true;
  }
  return folded;
}

nlohmann::json EtcdBackend::write_ops(const std::string& mutex, HistoryRecord& r,
                                      std::vector<HistoryEvent>& events,
                                      const std::vector<Store::Pending>& pending,
                                      std::string& value) const {
  nlohmann::json ops = history_ops(mutex, r, events, value);
  for (const Store::Pending& p : pending)
    ops.push_back({{"request_delete_range", {{"key", base64(p.key)}}}});
  return ops;
}

// Reads the record of `mutex`, folds in the acquisitions' events that wait
// for their number, lets `change` update it and say which events to append
// (false: nothing to write), and writes them in one transaction on the
// record's mod revision; again when another writer came first. Best
// effort: a failure here never changes a lease (the operation it records
// is done).
void EtcdBackend::write_history(const std::string& row, const HistoryChange& change,
                                int64_t deadline, uint64_t fold_last) {
  const std::string mutex(core::mutex_of_row(row)); // a slot's events are its mutex's
  for (int i = 0; i < 4 && sys::boottime_ms() < deadline; ++i) {
    // The record as this process last saw it (store.hpp): most often the
    // read of the operation itself; read anew when not, or when stale.
    if (!m_store.record_seen(mutex) && !m_store.read_record(mutex, deadline)) return;
    Store::Record seen = *m_store.record_seen(mutex);
    HistoryRecord r;
    int64_t mod = seen.mod_revision;
    if (mod != 0) r = decode_record(parse_json(seen.value));
    std::vector<HistoryEvent> events;
    bool folded = fold_pending(r, seen.pending, fold_last, events);
    bool changed = change(r, mod != 0 || !seen.pending.empty(), events);
    if (!folded && !changed) return;
    std::string value;
    nlohmann::json ops = write_ops(mutex, r, events, seen.pending, value);
    nlohmann::json txn = {{"compare", {record_unchanged(mutex, mod)}}, {"success", ops}};
    Call w = m_store.client().call("/v3/kv/txn", txn, true, deadline);
    bool written = w.ok() && flag(w.json, "succeeded");
    // Written: the record as it now stands (its mod revision is the
    // txn's, no event pending); else (stale, or unknown) read anew next time.
    m_store.record_is(mutex, written ? std::optional<Store::Record>(Store::Record{
                                           header_revision(w), value, {}})
                                     : std::nullopt);
    if (!w.ok() || written) return;
  }
}

int64_t EtcdBackend::history_deadline() const {
  return sys::boottime_ms() + std::min<int64_t>(m_uri.timeout_ms, 1000);
}

HistoryEvent EtcdBackend::event_of(const char* name, const std::string& owner, uint64_t token,
                                   const std::string& holder) const {
  HistoryEvent e;
  e.event = name;
  e.at = now();
  e.owner_id = owner;
  e.token = token;
  if (!holder.empty()) e.holder = decode_holder(holder);
  return e;
}

// What an acquire's reply leads to besides the lease: a plain contender
// that met slots (refused: simba ends with 64) leaves the queue at once
// (slots.cpp); a new lease of ours is written "acquired" (not yet for
// acquire_once, which writes it once the run is recorded), unless the
// transaction that queued us wrote it to be numbered later and the record
// has no lease to write the expiry of.
void EtcdBackend::after_acquire(const std::string& mutex, const std::string& contender,
                                const Reply& r, int64_t deadline) {
  if (r.ok() && !r.changed && core::slots_of_owner(r.observed.lease.owner_id) > 1)
    leave_queue(mutex, contender, deadline);
  if (!r.ok() || !r.changed || m_defer_acquired ||
      !r.observed.lease.owned_by(contender, r.observed.now))
    return;
  const Place& p = m_places[key(mutex, contender)];
  uint64_t token = r.observed.lease.fencing_token;
  std::optional<Store::Record> seen = m_store.record_seen(mutex);
  if (p.pending && seen && seen->pending.size() == 1 && seen->pending[0].token == token &&
      (seen->mod_revision == 0 ||
       decode_record(parse_json(seen->value)).open.empty()))
    return;
  note_acquired(mutex, contender, token, p.queued ? sys::wall_ms() - p.queued : 0, {},
                history_deadline());
}

// A new lease (`token`, ours): "acquired", after an "expired" of each
// earlier lease whose end nobody wrote and whose key is gone (`live`: the
// create revisions of the keys that still own; empty: none but ours).
void EtcdBackend::note_acquired(const std::string& mutex, const std::string& contender,
                                uint64_t token, int64_t waited_ms,
                                const std::vector<uint64_t>& live, int64_t deadline) {
  write_history(mutex, [&](HistoryRecord& r, bool, std::vector<HistoryEvent>& out) {
    if (r.open.count(token)) return false; // a renewal
    for (auto it = r.open.begin(); it != r.open.end();) {
      bool gone = it->first < token && std::find(live.begin(), live.end(), it->first) == live.end();
      if (!gone) {
        ++it;
        continue;
      }
      HistoryEvent e = event_of("expired", it->second.owner, it->first, "");
      e.held_ms = std::max<int64_t>(e.at - it->second.at, 0);
      out.push_back(e);
      if (!it->second.counted && !it->second.holding) ++r.losses;
      it = r.open.erase(it);
    }
    HistoryEvent e = event_of("acquired", contender, token, m_holder);
    e.waited_ms = std::max<int64_t>(waited_ms, 0);
    out.push_back(e);
    ++r.acquisitions;
    r.open[token] = OpenLease{contender, m_holder, e.at, false, false};
    return true;
  }, deadline, token); // ours written here, after the expiries
}

// The end of lease `token`: "released" (its owner's release, or one only
// held released by --lease), or "forced" (by us: our holder), a loss.
EtcdBackend::HistoryChange EtcdBackend::end_change(uint64_t token, bool forced) const {
  return [this, token, forced](HistoryRecord& r, bool, std::vector<HistoryEvent>& out) {
    auto it = r.open.find(token);
    if (it == r.open.end()) return false; // written already (a lost event, an expiry)
    // A forced one names who forced it; a release, like an expiry, no holder.
    HistoryEvent e = event_of(forced ? "forced" : "released", it->second.owner, token,
                              forced ? m_holder : "");
    e.held_ms = std::max<int64_t>(e.at - it->second.at, 0);
    if (!forced && m_exit_code) e.exit_code = *m_exit_code;
    out.push_back(e);
    if (forced && !it->second.counted) ++r.losses;
    r.open.erase(it);
    return true;
  };
}

void EtcdBackend::note_ended(const std::string& mutex, uint64_t token, bool forced,
                             int64_t deadline) {
  write_history(mutex, end_change(token, forced), deadline);
}

// The owner's release in one write with its event: our key `k` deleted
// unless it changed since `mod` (a forced release rewrote it), "released"
// and the record written, compared on the record's mod revision as this
// process last saw it (the acquisition's read or write), so that the ring's
// place is still the next one. A crash loses nothing here: both or neither.
// The record not seen or changed meanwhile (another process wrote an event
// of the mutex): the event first, then the key, as before (two writes).
Call EtcdBackend::remove_noting_end(const std::string& row, const std::string& k,
                                    uint64_t token, int64_t mod, bool& done, int64_t deadline) {
  const std::string mutex(core::mutex_of_row(row)); // a slot's events are its mutex's
  done = false;
  std::optional<Store::Record> seen = m_store.record_seen(mutex);
  HistoryRecord r;
  std::vector<HistoryEvent> events;
  if (seen && seen->mod_revision != 0)
    r = decode_record(parse_json(seen->value));
  // Our acquisition's event too when it waits for its number (the run's
  // only other write then was the one that queued us).
  bool folded = seen && fold_pending(r, seen->pending, 0, events);
  if (seen && (end_change(token, false)(r, true, events) || folded)) {
    std::string value;
    nlohmann::json ops = write_ops(mutex, r, events, seen->pending, value);
    ops.insert(ops.begin(), nlohmann::json{{"request_delete_range", {{"key", base64(k)}}}});
    nlohmann::json compare = key_unchanged(k, int64_t(token), mod);
    compare.push_back(record_unchanged(mutex, seen->mod_revision));
    nlohmann::json txn = {
        {"compare", compare}, {"success", ops}, {"failure", m_store.record_ranges(mutex)}};
    Call c = m_store.client().call("/v3/kv/txn", txn, true, deadline);
    if (!c.ok()) {
      m_store.record_is(mutex, std::nullopt);
      return c;
    }
    if (flag(c.json, "succeeded")) {
      done = true;
      m_store.record_is(mutex, Store::Record{header_revision(c), value, {}});
      return c;
    }
    m_store.note_record(mutex, c.json, 0); // as it is now: the event below needs no read
  }
  note_ended(mutex, token, false, history_deadline());
  return m_store.remove(k, int64_t(token), mod, done, deadline);
}

// A lease only held (--min-hold, simba acquire's) that runs out is its
// normal end: no loss.
void EtcdBackend::note_holding(const std::string& mutex, uint64_t token, int64_t deadline) {
  write_history(mutex, [&](HistoryRecord& r, bool, std::vector<HistoryEvent>&) {
    auto it = r.open.find(token);
    if (it == r.open.end() || it->second.holding) return false;
    it->second.holding = true;
    return true;
  }, deadline);
}

Reply EtcdBackend::record_lost(const std::string& row, const std::string& contender,
                               const LostLease& lost, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  const std::string mutex(core::mutex_of_row(row));
  write_history(mutex, [&](HistoryRecord& r, bool exists, std::vector<HistoryEvent>& out) {
    if (!exists) return false; // never leased: nothing
    HistoryEvent e = event_of("lost", contender, lost.token, m_holder);
    e.reason = lost.reason;
    e.by = lost.by;
    e.exit_code = lost.exit_code;
    e.held_ms = lost.held_ms;
    out.push_back(e);
    // Counted unless its forced or expired did (which closed it).
    auto it = r.open.find(lost.token);
    if (it != r.open.end() && !it->second.counted) {
      ++r.losses;
      it->second.counted = true;
    }
    return true;
  }, deadline);
  Reply r = get(row, std::max<int64_t>(deadline - sys::boottime_ms(), 1));
  r.changed = false;
  return r;
}

Reply EtcdBackend::record_skipped(const std::string& mutex, const std::string& contender,
                                  const SkippedRun& skipped, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  write_history(mutex, [&](HistoryRecord&, bool exists, std::vector<HistoryEvent>& out) {
    if (!exists) return false; // never leased: nothing
    HistoryEvent e = event_of("skipped", contender, skipped.token, m_holder);
    e.reason = skipped.reason;
    e.by = skipped.by;
    e.held_ms = skipped.held_ms;
    e.waited_ms = skipped.waited_ms;
    e.exit_code = skipped.exit_code;
    out.push_back(e);
    return true;
  }, deadline);
  Reply r = get(mutex, std::max<int64_t>(deadline - sys::boottime_ms(), 1));
  r.changed = false;
  return r;
}

History EtcdBackend::history(const std::string& mutex, int64_t since_ms, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  History h;
  // The ring and the acquisitions' events not numbered yet, at one revision.
  Call c = m_store.client().call(
      "/v3/kv/txn",
      {{"success", {{{"request_range", range_prefix(events_prefix(mutex))}},
                    {{"request_range", range_prefix(pending_prefix(m_uri.prefix, mutex))}}}}},
      false, deadline);
  if (!c.ok()) {
    h.error = c.error;
    return h;
  }
  h.ok = h.kept = true;
  h.now = now();
  std::vector<std::pair<int64_t, HistoryEvent>> numbered;
  for (int pending = 0; pending < 2; ++pending) {
    const std::string all = pending ? pending_prefix(m_uri.prefix, "") : events_prefix("");
    for (const nlohmann::json& kv : range_kvs(c.json, pending)) {
      std::string k = unbase64(text(kv, "key"));
      size_t bar = k.rfind('|');
      if (bar == std::string::npos || bar < all.size()) continue;
      nlohmann::json j = parse_json(unbase64(text(kv, "value")));
      if (!j.is_object()) continue;
      HistoryEvent e = decode_event(j, k.substr(all.size(), bar - all.size()));
      // A pending one comes after every numbered one, by its token.
      int64_t n = number(j, "n");
      if (pending) {
        if (!e.token) e.token = uint64_t(number(kv, "create_revision")); // enqueue's
        n = (int64_t(1) << 62) + int64_t(e.token);
      }
      if (e.at >= since_ms) numbered.emplace_back(n, std::move(e));
    }
  }
  // A mutex's events in their order; several mutexes' by time.
  std::stable_sort(numbered.begin(), numbered.end(), [](const auto& a, const auto& b) {
    if (a.second.mutex == b.second.mutex) return a.first < b.first;
    return a.second.at < b.second.at;
  });
  for (auto& [n, e] : numbered) h.events.push_back(std::move(e));
  return h;
}

// status: each listed mutex's counters, from its record (0 without one);
// `all`: every mutex with a record (ever leased) is listed, free or not.
void EtcdBackend::add_counters(Listing& out, bool all, int64_t deadline) {
  const std::string from = m_uri.prefix + "!e/";
  const std::string pending = pending_prefix(m_uri.prefix, "");
  Call c = m_store.client().call("/v3/kv/txn",
                                 {{"success", {{{"request_range", range_prefix(from)}},
                                               {{"request_range", range_prefix(pending)}}}}},
                                 false, deadline);
  if (!c.ok()) return;
  std::map<std::string, HistoryRecord> records;
  for (const nlohmann::json& kv : range_kvs(c.json, 0)) {
    std::string key = unbase64(text(kv, "key"));
    if (key.compare(0, from.size(), from) != 0) continue; // not asked for: a broken gateway
    records[key.substr(from.size())] = decode_record(
        parse_json(unbase64(text(kv, "value"))));
  }
  // An acquisition whose event waits for its number counts already.
  for (const nlohmann::json& kv : range_kvs(c.json, 1)) {
    std::string k = unbase64(text(kv, "key"));
    size_t bar = k.rfind('|');
    if (bar != std::string::npos && bar >= pending.size())
      ++records[k.substr(pending.size(), bar - pending.size())].acquisitions;
  }
  for (const auto& [name, record] : records)
    if (all && std::none_of(out.mutexes.begin(), out.mutexes.end(),
                            [&](const MutexLease& m) { return m.mutex == name; })) {
      MutexLease m;
      m.mutex = name;
      out.mutexes.push_back(std::move(m));
    }
  for (MutexLease& m : out.mutexes) {
    auto it = records.find(m.mutex);
    m.acquisitions = it == records.end() ? 0 : it->second.acquisitions;
    m.losses = it == records.end() ? 0 : it->second.losses;
  }
}

} // namespace simba::backend::etcd
