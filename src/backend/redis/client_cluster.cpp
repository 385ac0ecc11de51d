// The Client's calls that a Redis Cluster routes (client.hpp): with one
// server each is the plain call; with redis+cluster:// it goes through
// ClusterRoute (cluster_route.hpp).
#include "backend/redis/client.hpp"

#include "backend/redis/cluster_route.hpp"

#include <algorithm>

namespace simba::backend::redis {
namespace {

// The keys that route a lease script on `keys` (the script's own: hash,
// fence, marker): those of the mutex's slot, and every key of the mutex
// that the scripts may touch without declaring it. While the slot
// migrates, a node runs a command only when it holds every key it
// declares (else ASK or TRYAGAIN, before anything runs), so a script
// never stops half-way on a key that already left.
std::vector<std::string> route_keys(const std::vector<std::string>& keys, int slot) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& k) {
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  };
  for (const std::string& k : keys) {
    if (k == k_marker || key_slot(k) != slot) continue;
    add(k);
    // "<prefix>{m}" or a slot's row "<prefix>{m}#k": the mutex's keys
    // (lua/common.lua, common_once.lua).
    size_t close = k.find('}');
    if (close == std::string::npos || (close + 1 < k.size() && k[close + 1] != '#')) continue;
    std::string base = k.substr(0, close + 1);
    for (const char* tail : {"", ":waiters", ":who", ":history", ":once"}) add(base + tail);
  }
  return out;
}

} // namespace

Exchange Client::cluster_script(const lua::Script& s, const std::vector<std::string>& keys,
                                const std::vector<std::string>& args, int64_t deadline,
                                bool ping_first) {
  auto first = std::find_if(keys.begin(), keys.end(),
                            [](const std::string& k) { return k != k_marker; });
  int slot = first == keys.end() ? 0 : key_slot(*first);
  return m_cluster->script(slot, s, route_keys(keys, slot), keys, args, deadline, ping_first);
}

std::vector<std::string> Client::listing_nodes(int64_t deadline, std::string& error) {
  if (!m_cluster) return {""};
  return m_cluster->masters(deadline, error);
}

Exchange Client::call_on(const std::string& node, std::vector<Command> commands,
                         int64_t deadline) {
  if (!m_cluster) return call(std::move(commands), deadline);
  return m_cluster->call_on(node, commands, deadline);
}

Exchange Client::call_script_on(const std::string& node, const lua::Script& s,
                                const std::vector<std::string>& keys,
                                const std::vector<std::string>& args, int64_t deadline) {
  if (!m_cluster || node.empty()) return call_script(s, keys, args, deadline);
  return m_cluster->script_on(node, s, keys, args, deadline);
}

std::string Client::connect_subscriber(Connection& c, const std::string& mutex, int64_t deadline,
                                       std::string& where) {
  if (!m_cluster) {
    std::string err = connect(c, deadline, false, false);
    where = m_where; // Sentinel: the master connect() found
    return err;
  }
  return m_cluster->connect_subscriber(c, key_slot(hash_key(mutex)), deadline, where);
}

std::string Client::where_of(const std::string& mutex) const {
  return m_cluster ? m_cluster->where_of(key_slot(hash_key(mutex))) : m_where;
}

} // namespace simba::backend::redis
