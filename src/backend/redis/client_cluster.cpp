// The Client's calls that a Redis Cluster routes (client.hpp): with one
// server each is the plain call; with redis+cluster:// it goes through
// ClusterRoute (cluster_route.hpp).
#include "backend/redis/client.hpp"

#include "backend/redis/cluster_route.hpp"

#include <algorithm>

namespace simba::backend::redis {
namespace {

// The keys that route a script: those of `keys` (its own) in `slot`,
// the marker aside. Only these: while the slot migrates, a node runs a
// command only when it holds every key the command declares (else ASK or
// TRYAGAIN, before anything runs), and a key that does not exist (no
// waiters, no history) would turn every call into TRYAGAIN until the
// migration ends, a held lease's renewals too. The keys a script touches
// undeclared: on the target (ASKING) any key of the slot may be touched;
// on the source a key that already left fails the script there (it stops
// with an error; each script reads before it writes what matters, so what
// it wrote by then ends no lease and grants none untold: docs/backends/redis.md "Redis
// Cluster").
std::vector<std::string> route_keys(const std::vector<std::string>& keys, int slot) {
  std::vector<std::string> out;
  for (const std::string& k : keys)
    if (k != k_marker && key_slot(k) == slot) out.push_back(k);
  return out;
}

} // namespace

Exchange Client::cluster_script(const lua::Script& s, const std::vector<std::string>& keys,
                                const std::vector<std::string>& args, int64_t deadline,
                                bool ping_first) {
  auto first =
      std::find_if(keys.begin(), keys.end(), [](const std::string& k) { return k != k_marker; });
  int slot = first == keys.end() ? 0 : key_slot(*first);
  return m_cluster->script(slot, s, route_keys(keys, slot), keys, args, deadline, ping_first);
}

std::vector<std::string> Client::listing_nodes(int64_t deadline, std::string& error) {
  if (!m_cluster) return {""};
  return m_cluster->masters(deadline, error);
}

Exchange Client::call_on(const std::string& node, std::vector<Command> commands, int64_t deadline) {
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

void Client::learn_redirect(const std::string& error_text) {
  if (m_cluster) m_cluster->learn_redirect(error_text);
}

std::string Client::where_of(const std::string& mutex) const {
  return m_cluster ? m_cluster->where_of(key_slot(hash_key(mutex))) : m_where;
}

} // namespace simba::backend::redis
