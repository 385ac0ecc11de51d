// Listing the mutexes (listing.hpp).
//
// The names come from SCAN over the fence counters, not from a set of
// names kept by acquire: a set would be one more write on every
// acquisition, to a key outside the mutex's hash slot. The counters never
// expire, so every mutex ever acquired is found (like the rows SQLite
// keeps). SCAN walks the whole keyspace, which is fine for `status`; in a
// Redis Cluster it walks every master's, and each master's mutexes are
// read there, by one script (times on each master's clock; status shows
// them against the first master's).
#include "backend/redis/listing.hpp"

#include "backend/holder.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include <cstring>
#include <set>

namespace simba::backend::redis {
std::string glob_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::strchr("*?[]\\", c)) out += '\\';
    out += c;
  }
  return out;
}

namespace {

constexpr const char* k_scan_count = "1000";

// "<prefix>{NAME}:fence" -> NAME, "" if the key is not one of ours.
std::string mutex_of_fence(const std::string& key, const std::string& prefix) {
  static const std::string k_tail = "}:fence";
  size_t head = prefix.size() + 1;
  if (key.size() <= head + k_tail.size() || key.compare(0, prefix.size(), prefix) != 0 ||
      key[head - 1] != '{' || key.compare(key.size() - k_tail.size(), k_tail.size(), k_tail) != 0)
    return "";
  std::string name = key.substr(head, key.size() - head - k_tail.size());
  return name.find_first_of("{}") == std::string::npos ? name : "";
}

// The names of the mutexes on `node` (Client::listing_nodes(); SCAN may
// return a key twice: a set); false with `error` set when the scan failed.
bool scan_names(Client& client, const std::string& node, int64_t deadline,
                std::set<std::string>& names, std::string& error) {
  const std::string& prefix = client.uri().prefix;
  std::string pattern = glob_escape(prefix) + "{*}:fence";
  std::string cursor = "0";
  do {
    Exchange x =
        client.call_on(node, {{"SCAN", cursor, "MATCH", pattern, "COUNT", k_scan_count}}, deadline);
    const redisReply* r = client.answer(x, error);
    if (!r) return false;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !as_string(r->element[0], cursor) ||
        r->element[1]->type != REDIS_REPLY_ARRAY) {
      error = "unexpected reply to SCAN";
      return false;
    }
    for (size_t i = 0; i < r->element[1]->elements; ++i) {
      std::string key;
      if (!as_string(r->element[1]->element[i], key)) continue;
      std::string name = mutex_of_fence(key, prefix);
      if (!name.empty()) names.insert(name);
    }
  } while (cursor != "0");
  return true;
}

// The mutexes a read covers, by where they are read (Client::
// call_script_on()): with one server, or `mutex` alone, one group read on
// "" (routed by its keys); in a Redis Cluster, every master's own
// mutexes, read there.
struct Group {
  std::string node;
  std::set<std::string> names;
};

bool names_to_read(Client& client, const std::string& mutex, int64_t deadline,
                   std::vector<Group>& groups, std::string& error) {
  if (!mutex.empty()) {
    groups.push_back({"", {mutex}});
    return true;
  }
  for (const std::string& node : client.listing_nodes(deadline, error)) {
    groups.push_back({node, {}});
    if (!scan_names(client, node, deadline, groups.back().names, error)) return false;
  }
  return error.empty();
}

// KEYS of lua/inspect.lua: the marker, then each mutex's
// hash and fence.
std::vector<std::string> lease_keys(Client& client, const std::set<std::string>& names) {
  std::vector<std::string> keys{k_marker};
  for (const std::string& n : names) {
    keys.push_back(client.hash_key(n));
    keys.push_back(client.hash_key(n) + ":fence");
  }
  return keys;
}

// Each group's names come sorted (std::set); a cluster's groups are merged.
void sort_by_name(Listing& out) {
  std::stable_sort(out.mutexes.begin(), out.mutexes.end(),
                   [](const MutexLease& a, const MutexLease& b) { return a.mutex < b.mutex; });
}

// One mutex of the inspect script's answer at `i` (lua/inspect.lua),
// `i` moved past it; false when it is not what the script sends.
bool read_inspected(const redisReply* r, size_t& i, MutexLease& ml) {
  if (i + k_lease_fields + 2 > r->elements || !read_lease(r, i, ml.lease)) return false;
  i += k_lease_fields;
  std::string text;
  int64_t n = 0;
  if (!as_string(r->element[i++], text) || !as_int(r->element[i++], n) || n < 0 ||
      i + 4 * size_t(n) > r->elements)
    return false;
  ml.holder = decode_holder(text);
  for (int64_t k = 0; k < n; ++k) {
    Waiter w;
    int64_t gives_up_at = 0;
    if (!as_string(r->element[i], w.owner_id) || !as_int(r->element[i + 1], w.since) ||
        !as_string(r->element[i + 2], text) || !as_int(r->element[i + 3], gives_up_at))
      return false;
    w.holder = decode_holder(text);
    if (gives_up_at > 0) w.gives_up_at = gives_up_at;
    ml.waiters.push_back(std::move(w));
    i += 4;
  }
  // --slots N: each slot (lua/inspect.lua).
  if (i >= r->elements || !as_int(r->element[i++], n) || n < 0 ||
      i + (k_lease_fields + 1) * size_t(n) > r->elements)
    return false;
  for (int64_t k = 0; k < n; ++k) {
    SlotLease s;
    if (!read_lease(r, i, s.lease) || !as_string(r->element[i + k_lease_fields], text))
      return false;
    s.lease.slot = int(k);
    s.holder = decode_holder(text);
    ml.slots.push_back(std::move(s));
    i += k_lease_fields + 1;
  }
  // Its counters (lua/common.lua: count).
  if (i + 2 > r->elements || !as_int(r->element[i], ml.acquisitions.emplace()) ||
      !as_int(r->element[i + 1], ml.losses.emplace()))
    return false;
  i += 2;
  return true;
}

} // namespace

Listing inspect_mutexes(Client& client, const std::string& mutex, int64_t timeout_ms) {
  Listing out;
  out.holders_kept = out.waiters_kept = true;
  int64_t deadline = client.call_deadline(timeout_ms);
  std::vector<Group> groups;
  if (!names_to_read(client, mutex, deadline, groups, out.error)) return out;
  for (const Group& group : groups) {
    const std::set<std::string>& names = group.names;
    Exchange x = client.call_script_on(group.node, lua::k_inspect, lease_keys(client, names),
                                       client.script_args({}), deadline);
    const redisReply* r = client.answer(x, out.error);
    if (!r) return out;
    int64_t now = 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || !as_int(r->element[0], now)) {
      out.error = "unexpected reply from the inspect script";
      return out;
    }
    if (out.now == 0) out.now = now; // a cluster: the first master's clock
    size_t i = 1;
    for (const std::string& n : names) {
      MutexLease ml;
      ml.mutex = n;
      if (!read_inspected(r, i, ml)) {
        out.error = "unexpected reply from the inspect script";
        out.mutexes.clear();
        return out;
      }
      out.mutexes.push_back(std::move(ml));
    }
  }
  sort_by_name(out);
  out.ok = true;
  return out;
}

namespace {

std::optional<int64_t> number_in(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) return std::nullopt;
  return std::stoll(it->get<std::string>());
}

// One entry of lua/common.lua's history().
bool parse_event(const std::string& mutex, const std::string& text, HistoryEvent& e) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return false;
  e.mutex = mutex;
  e.event = j.value("e", "");
  e.owner_id = j.value("o", "");
  e.at = number_in(j, "at").value_or(0);
  e.token = uint64_t(number_in(j, "t").value_or(0));
  if (std::string h = j.value("h", ""); !h.empty()) e.holder = decode_holder(h);
  if (auto x = number_in(j, "x")) e.exit_code = int(*x);
  e.held_ms = number_in(j, "hd");
  e.waited_ms = number_in(j, "w");
  e.reason = j.value("r", "");
  e.by = j.value("b", "");
  return true;
}

} // namespace

History read_history(Client& client, const std::string& mutex, int64_t since_ms,
                     int64_t timeout_ms) {
  History out;
  out.kept = true;
  int64_t deadline = client.call_deadline(timeout_ms);
  std::vector<Group> groups;
  if (!names_to_read(client, mutex, deadline, groups, out.error)) return out;
  for (const Group& group : groups) {
    std::vector<std::string> keys;
    for (const std::string& n : group.names) keys.push_back(client.hash_key(n));
    Exchange x = client.call_script_on(group.node, lua::k_history, keys,
                                       client.script_args({std::to_string(since_ms)}), deadline);
    const redisReply* r = client.answer(x, out.error);
    if (!r) return out;
    int64_t now = 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || !as_int(r->element[0], now)) {
      out.error = "unexpected reply from the history script";
      return out;
    }
    if (out.now == 0) out.now = now;
    size_t i = 1;
    for (const std::string& n : group.names) {
      int64_t count = 0;
      if (i >= r->elements || !as_int(r->element[i++], count) || i + size_t(count) > r->elements) {
        out.error = "unexpected reply from the history script";
        out.events.clear();
        return out;
      }
      for (int64_t k = 0; k < count; ++k) {
        std::string text;
        HistoryEvent e;
        if (as_string(r->element[i++], text) && parse_event(n, text, e))
          out.events.push_back(std::move(e));
      }
    }
  }
  std::stable_sort(out.events.begin(), out.events.end(),
                   [](const HistoryEvent& a, const HistoryEvent& b) { return a.at < b.at; });
  out.ok = true;
  return out;
}

} // namespace simba::backend::redis
