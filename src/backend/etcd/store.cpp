// The backend's etcd calls, typed (store.hpp).
#include "backend/etcd/store.hpp"

#include <algorithm>
#include <cstdlib>

namespace simba::backend::etcd {
namespace {

// The keys of the n-th response of a txn answer (a response_range).
std::vector<Kv> kvs_at(const nlohmann::json& txn, size_t n) {
  if (!txn.contains("responses") || !txn["responses"].is_array() || txn["responses"].size() <= n)
    return {};
  const nlohmann::json& r = txn["responses"][n];
  return r.contains("response_range") ? kvs_of(r["response_range"]) : std::vector<Kv>{};
}

std::optional<Kv> first(std::vector<Kv> kvs) {
  if (kvs.empty()) return std::nullopt;
  return std::move(kvs.front());
}

// The key that holds slot `slot` (--slots: slots.cpp), read as its row.
std::optional<Kv> slot_holder(const std::vector<Kv>& kvs, int slot) {
  for (const Kv& kv : kvs)
    if (kv.entry.slot == slot && kv.entry.slots > 1) {
      Kv row = kv;
      row.row = true;
      return row;
    }
  return std::nullopt;
}

int64_t revision_of(const nlohmann::json& j) {
  return j.contains("header") ? number(j["header"], "revision") : 0;
}

} // namespace

int64_t header_revision(const Call& c) { return revision_of(c.json); }

LeaseCall Store::grant(int64_t ttl_s, int64_t deadline) {
  LeaseCall l;
  l.call = m_client.call("/v3/lease/grant", {{"TTL", std::to_string(ttl_s)}}, true, deadline);
  if (!l.call.ok()) return l;
  l.id = std::to_string(number(l.call.json, "ID"));
  l.ttl_s = number(l.call.json, "TTL");
  if (l.ttl_s <= 0 || l.id == "0") {
    l.call.status = Reply::Status::failed;
    l.call.error = "etcd granted no lease: " + text(l.call.json, "error", "?");
  }
  return l;
}

LeaseCall Store::keep_alive(const std::string& id, int64_t deadline) {
  LeaseCall l;
  l.id = id;
  // A stream of keep-alives in gRPC; through the gateway one request, one
  // answer: {"result": {"ID", "TTL"}} (no TTL: the lease is gone).
  l.call = m_client.call("/v3/lease/keepalive", {{"ID", id}}, true, deadline);
  if (l.call.ok()) {
    const nlohmann::json& r = l.call.json.contains("result") ? l.call.json["result"] : l.call.json;
    l.ttl_s = number(r, "TTL");
  }
  return l;
}

Call Store::revoke(const std::string& id, int64_t deadline) {
  return m_client.call("/v3/lease/revoke", {{"ID", id}}, true, deadline);
}

int64_t Store::seconds_left(const std::string& id, int64_t deadline, int64_t* granted) {
  Call c = m_client.call("/v3/lease/timetolive", {{"ID", id}}, false, deadline);
  if (!c.ok()) return 0;
  int64_t ttl = number(c.json, "TTL");
  if (granted) *granted = number(c.json, "grantedTTL");
  return ttl < 0 ? -1 : ttl;
}

Seen Store::read(const std::string& mutex, const std::string& key, int64_t deadline) {
  // A slot's row "m#k" (core/slots.hpp): the key of m that holds slot k
  // stands where a plain mutex's oldest key does.
  size_t hash = mutex.find('#');
  int row_slot = hash == std::string::npos ? -1 : std::atoi(mutex.c_str() + hash + 1);
  std::string name = mutex.substr(0, hash);
  nlohmann::json ops = nlohmann::json::array();
  ops.push_back({{"request_range", row_slot < 0 ? range_oldest(prefix(), name)
                                                : range_all(prefix(), name)}});
  if (!key.empty()) ops.push_back({{"request_range", range_one(key)}});
  for (const nlohmann::json& op : record_ranges(name)) ops.push_back(op); // the last two
  Seen s;
  s.call = m_client.call("/v3/kv/txn", {{"success", ops}}, false, deadline);
  if (!s.call.ok()) return s;
  note_record(name, s.call.json, ops.size() - 2);
  s.revision = revision_of(s.call.json);
  s.oldest = row_slot < 0 ? first(kvs_at(s.call.json, 0)) : slot_holder(kvs_at(s.call.json, 0), row_slot);
  if (!key.empty()) s.mine = first(kvs_at(s.call.json, 1));
  return s;
}

Seen Store::enqueue(const std::string& mutex, const std::string& key, const Entry& entry,
                    const std::string& lease, const std::string& event, bool& created,
                    int64_t deadline) {
  nlohmann::json put = {{"key", base64(key)}, {"value", base64(encode_entry(entry))},
                        {"lease", lease}};
  nlohmann::json reads = nlohmann::json::array(
      {{{"request_range", range_oldest(prefix(), mutex)}}, {{"request_range", range_one(key)}}});
  for (const nlohmann::json& op : record_ranges(mutex)) reads.push_back(op);
  nlohmann::json success = {{{"request_put", put}}};
  if (!event.empty()) // its compare is of the store before our put
    success.push_back(
        {{"request_txn",
          {{"compare", {mutex_is_free(prefix(), mutex)}},
           {"success", {{{"request_put", {{"key", base64(pending_prefix(prefix(), mutex) + lease)},
                                          {"value", base64(event)}}}}}}}}});
  for (const nlohmann::json& op : reads) success.push_back(op);
  success.push_back({{"request_range", range_newest(prefix(), mutex, 2)}});
  nlohmann::json txn = {
      {"compare", {{{"target", "CREATE"}, {"result", "EQUAL"}, {"key", base64(key)},
                    {"create_revision", "0"}}}},
      {"success", success},
      {"failure", reads}};
  Seen s;
  s.call = m_client.call("/v3/kv/txn", txn, true, deadline);
  if (!s.call.ok()) return s;
  created = flag(s.call.json, "succeeded");
  size_t at = created ? (event.empty() ? 1 : 2) : 0;
  if (created && !event.empty()) {
    const nlohmann::json& rs = member(s.call.json, "responses");
    s.pending = rs.is_array() && rs.size() > 1 && flag(member(rs[1], "response_txn"), "succeeded");
  }
  note_record(mutex, s.call.json, at + 2);
  s.revision = revision_of(s.call.json);
  s.oldest = first(kvs_at(s.call.json, at));
  s.mine = first(kvs_at(s.call.json, at + 1));
  m_predecessor.reset();
  // The newest two keys at the put's revision: ours, and the one just
  // before it (none: ours is the oldest). Not with --slots: a slot's waiter
  // watches another key (slots.cpp).
  std::vector<Kv> newest = created ? kvs_at(s.call.json, at + 4) : std::vector<Kv>{};
  if (newest.size() == 2 && newest[0].key == key && entry.slots <= 1)
    m_predecessor = Predecessor{key, newest[1].key, s.revision};
  return s;
}

Seen Store::take(const std::string& mutex, const std::string& key, int64_t created,
                 const std::string& lease, const std::string& event, int64_t deadline) {
  nlohmann::json reads = nlohmann::json::array(
      {{{"request_range", range_oldest(prefix(), mutex)}}, {{"request_range", range_one(key)}}});
  for (const nlohmann::json& op : record_ranges(mutex)) reads.push_back(op);
  nlohmann::json compare = key_unchanged(key, created, created);
  compare.push_back(no_key_before(prefix(), mutex, created));
  nlohmann::json success = {{{"request_put", {{"key", base64(pending_prefix(prefix(), mutex) + lease)},
                                              {"value", base64(event)}}}}};
  for (const nlohmann::json& op : reads) success.push_back(op);
  Seen s;
  s.call = m_client.call("/v3/kv/txn", {{"compare", compare}, {"success", success}, {"failure", reads}},
                         true, deadline);
  if (!s.call.ok()) return s;
  s.pending = flag(s.call.json, "succeeded");
  size_t at = s.pending ? 1 : 0;
  note_record(mutex, s.call.json, at + 2);
  s.revision = revision_of(s.call.json);
  s.oldest = first(kvs_at(s.call.json, at));
  s.mine = first(kvs_at(s.call.json, at + 1));
  return s;
}

std::optional<Predecessor> Store::take_predecessor(const std::string& mine, bool waiting) {
  std::optional<Predecessor> p;
  if (m_predecessor && m_predecessor->mine == mine && (m_predecessor->key != mine) == waiting)
    p = std::move(m_predecessor);
  m_predecessor.reset();
  return p;
}

Call Store::rewrite(const std::string& key, int64_t mod_revision, const Entry& entry,
                    const std::string& lease, bool& done, int64_t deadline) {
  nlohmann::json put = {{"key", base64(key)}, {"value", base64(encode_entry(entry))}};
  if (lease.empty())
    put["ignore_lease"] = true;
  else
    put["lease"] = lease;
  nlohmann::json txn = {
      {"compare", {{{"target", "MOD"}, {"result", "EQUAL"}, {"key", base64(key)},
                    {"mod_revision", std::to_string(mod_revision)}}}},
      {"success", {{{"request_put", put}}}}};
  Call c = m_client.call("/v3/kv/txn", txn, true, deadline);
  done = c.ok() && flag(c.json, "succeeded");
  return c;
}

nlohmann::json Store::record_ranges(const std::string& mutex) const {
  return nlohmann::json::array({{{"request_range", range_one(record_key(prefix(), mutex))}},
                                {{"request_range", range_prefix(pending_prefix(prefix(), mutex))}}});
}

void Store::note_record(const std::string& mutex, const nlohmann::json& txn, size_t at) {
  if (!txn.contains("responses") || !txn["responses"].is_array() ||
      txn["responses"].size() <= at + 1)
    return;
  const nlohmann::json& r = txn["responses"][at];
  const nlohmann::json& p = txn["responses"][at + 1];
  if (!r.contains("response_range") || !p.contains("response_range")) return;
  const nlohmann::json& range = r["response_range"];
  Record rec;
  if (range.contains("kvs") && range["kvs"].is_array() && !range["kvs"].empty()) {
    rec.mod_revision = number(range["kvs"][0], "mod_revision");
    rec.value = unbase64(text(range["kvs"][0], "value"));
  }
  if (p["response_range"].contains("kvs") && p["response_range"]["kvs"].is_array())
    for (const nlohmann::json& kv : p["response_range"]["kvs"])
    {
      std::string value = unbase64(text(kv, "value"));
      int64_t token = number(parse_json(value), "t");
      rec.pending.push_back(Pending{unbase64(text(kv, "key")),
                                    uint64_t(token ? token : number(kv, "create_revision")),
                                    value});
    }
  std::sort(rec.pending.begin(), rec.pending.end(),
            [](const Pending& a, const Pending& b) { return a.token < b.token; });
  m_records[mutex] = rec;
}

bool Store::read_record(const std::string& mutex, int64_t deadline) {
  Call c = m_client.call("/v3/kv/txn", {{"success", record_ranges(mutex)}}, false, deadline);
  if (c.ok()) note_record(mutex, c.json, 0);
  return c.ok();
}

std::optional<Store::Record> Store::record_seen(const std::string& mutex) const {
  auto it = m_records.find(mutex);
  if (it == m_records.end()) return std::nullopt;
  return it->second;
}

void Store::record_is(const std::string& mutex, std::optional<Record> r) {
  if (r)
    m_records[mutex] = *r;
  else
    m_records.erase(mutex);
}

Call Store::remove(const std::string& key, int64_t create_revision, int64_t mod_revision,
                   bool& done, int64_t deadline) {
  nlohmann::json txn = {{"compare", key_unchanged(key, create_revision, mod_revision)},
                        {"success", {{{"request_delete_range", {{"key", base64(key)}}}}}}};
  Call c = m_client.call("/v3/kv/txn", txn, true, deadline);
  done = c.ok() && flag(c.json, "succeeded");
  return c;
}

} // namespace simba::backend::etcd
