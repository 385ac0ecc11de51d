// The keys simba writes in etcd and the JSON that reads them (keys.hpp).
#include "backend/etcd/keys.hpp"

#include "backend/etcd/client.hpp"

#include <cstring>

namespace simba::backend::etcd {
namespace {

constexpr const char* k_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The end of a prefix range: the prefix with its last byte raised.
std::string range_end_of(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xff) prefix.pop_back();
  if (prefix.empty()) return std::string(1, '\0'); // every key
  prefix.back() = static_cast<char>(prefix.back() + 1);
  return prefix;
}

std::string mutex_prefix(const std::string& prefix, const std::string& mutex) {
  return prefix + mutex + "|";
}

} // namespace

std::string queue_key(const std::string& prefix, const std::string& mutex,
                      const std::string& owner) {
  return mutex_prefix(prefix, mutex) + owner;
}

std::string record_key(const std::string& prefix, const std::string& mutex) {
  return prefix + "!e/" + mutex;
}

std::string pending_prefix(const std::string& prefix, const std::string& mutex) {
  return prefix + "!p/" + mutex + (mutex.empty() ? "" : "|");
}

std::string mutex_of_key(const std::string& prefix, const std::string& key) {
  // '!' begins no mutex name: simba's other keys (records, history).
  if (key.compare(0, prefix.size(), prefix) != 0 || key.compare(prefix.size(), 1, "!") == 0)
    return "";
  size_t bar = key.find('|', prefix.size());
  return bar == std::string::npos ? "" : key.substr(prefix.size(), bar - prefix.size());
}

std::string encode_entry(const Entry& e) {
  nlohmann::json j = {{"o", e.owner}, {"s", e.since}, {"t", e.length_ms}};
  if (!e.holder.empty()) j["h"] = e.holder;
  if (e.gives_up) j["g"] = e.gives_up;
  if (e.revoked) j["x"] = 1;
  if (e.holding) j["k"] = 1;
  if (e.acquired) j["a"] = e.acquired;
  if (e.ttl_at) j["l"] = e.ttl_at;
  if (e.until) j["u"] = e.until;
  if (e.slots) j["n"] = e.slots;
  if (e.slot >= 0) j["z"] = e.slot;
  return j.dump();
}

Entry decode_entry(const std::string& value) {
  Entry e;
  nlohmann::json j = parse_json(value);
  if (!j.is_object()) return e;
  if (j.contains("o") && j["o"].is_string()) e.owner = j["o"].get<std::string>();
  if (j.contains("h") && j["h"].is_string()) e.holder = j["h"].get<std::string>();
  e.since = number(j, "s");
  e.gives_up = number(j, "g");
  e.length_ms = number(j, "t");
  e.revoked = number(j, "x") != 0;
  e.holding = number(j, "k") != 0;
  e.acquired = number(j, "a");
  e.ttl_at = number(j, "l");
  e.until = number(j, "u");
  e.slots = int(number(j, "n"));
  e.slot = j.contains("z") ? int(number(j, "z")) : -1;
  return e;
}

std::string base64(const std::string& bytes) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = uint8_t(bytes[i]) << 16 | uint8_t(bytes[i + 1]) << 8 | uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += k_alphabet[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint8_t(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= uint8_t(bytes[i + 1]) << 8;
    out += k_alphabet[(v >> 18) & 63];
    out += k_alphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? k_alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string unbase64(const std::string& text) {
  std::string out;
  uint32_t v = 0;
  int bits = 0;
  for (char c : text) {
    const char* at = c ? std::strchr(k_alphabet, c) : nullptr;
    if (!at) continue; // '=' and anything else: etcd writes only the alphabet
    v = v << 6 | uint32_t(at - k_alphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xff);
    }
  }
  return out;
}

nlohmann::json range_one(const std::string& key) { return {{"key", base64(key)}}; }

nlohmann::json range_prefix(const std::string& from) {
  return {{"key", base64(from)}, {"range_end", base64(range_end_of(from))}};
}

nlohmann::json mutex_is_free(const std::string& prefix, const std::string& mutex) {
  // Over a range a compare holds for every key in it; with none, it sees
  // one whose create revision is 0.
  std::string from = mutex_prefix(prefix, mutex);
  return {{"target", "CREATE"}, {"result", "EQUAL"}, {"key", base64(from)},
          {"range_end", base64(range_end_of(from))}, {"create_revision", "0"}};
}

nlohmann::json no_key_before(const std::string& prefix, const std::string& mutex,
                             int64_t create_revision) {
  std::string from = mutex_prefix(prefix, mutex);
  return {{"target", "CREATE"}, {"result", "GREATER"}, {"key", base64(from)},
          {"range_end", base64(range_end_of(from))},
          {"create_revision", std::to_string(create_revision - 1)}};
}

nlohmann::json range_oldest(const std::string& prefix, const std::string& mutex) {
  nlohmann::json r = range_all(prefix, mutex);
  r["limit"] = "1";
  return r;
}

nlohmann::json range_lowest(const std::string& prefix, const std::string& mutex, int n) {
  nlohmann::json r = range_all(prefix, mutex);
  r["limit"] = std::to_string(n);
  return r;
}

nlohmann::json range_all(const std::string& prefix, const std::string& mutex) {
  std::string from = mutex.empty() ? prefix : mutex_prefix(prefix, mutex);
  return {{"key", base64(from)},
          {"range_end", base64(range_end_of(from))},
          {"sort_order", "ASCEND"},
          {"sort_target", "CREATE"}};
}

nlohmann::json range_newest(const std::string& prefix, const std::string& mutex, int n) {
  nlohmann::json r = range_all(prefix, mutex);
  r["sort_order"] = "DESCEND";
  r["limit"] = std::to_string(n);
  r["keys_only"] = true;
  return r;
}

nlohmann::json range_before(const std::string& prefix, const std::string& mutex,
                            int64_t revision) {
  nlohmann::json r = range_all(prefix, mutex);
  r["sort_order"] = "DESCEND";
  r["max_create_revision"] = std::to_string(revision - 1);
  r["limit"] = "1";
  r["keys_only"] = true;
  return r;
}

std::vector<Kv> kvs_of(const nlohmann::json& range) {
  std::vector<Kv> out;
  if (!range.is_object() || !range.contains("kvs") || !range["kvs"].is_array()) return out;
  for (const nlohmann::json& j : range["kvs"]) {
    if (!member(j, "key").is_string()) continue; // no key: nothing to keep
    Kv kv;
    kv.key = unbase64(text(j, "key"));
    kv.create_revision = number(j, "create_revision");
    kv.mod_revision = number(j, "mod_revision");
    kv.lease = std::to_string(number(j, "lease"));
    kv.entry = decode_entry(unbase64(text(j, "value")));
    out.push_back(std::move(kv));
  }
  return out;
}

nlohmann::json key_unchanged(const std::string& key, int64_t create_revision,
                             int64_t mod_revision) {
  return nlohmann::json::array(
      {{{"target", "CREATE"}, {"result", "EQUAL"}, {"key", base64(key)},
        {"create_revision", std::to_string(create_revision)}},
       {{"target", "MOD"}, {"result", "EQUAL"}, {"key", base64(key)},
        {"mod_revision", std::to_string(mod_revision)}}});
}

} // namespace simba::backend::etcd
