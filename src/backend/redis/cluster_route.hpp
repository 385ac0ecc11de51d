#pragma once
// Redis Cluster (redis+cluster://, docs/backends/redis.md "Redis Cluster"): the slot map,
// one connection per master, and each call sent to the master that serves
// its mutex's slot, following MOVED (the map is updated, the call goes
// again to the new master) and ASK (ASKING, then the call on the target,
// once), waiting out TRYAGAIN, all within the call's one deadline. A
// redirection means the node ran nothing: sending the call again cannot
// apply it twice.
//
// Every master has its own server run (its run_id: the quarantine of
// lua/common.lua is per node) and its own marker, a key in the lowest slot
// it serves ("simba:server{TAG}"), which the scripts reach as an undeclared
// key (lua/common.lua: "+keys").
#include "backend/redis/cluster_slots.hpp"
#include "backend/redis/connection.hpp"
#include "backend/redis/lua_scripts.hpp"
#include "backend/uri.hpp"

#include <memory>
#include <string>
#include <vector>

namespace simba::backend::redis {

class ClusterRoute {
public:
  explicit ClusterRoute(const RedisUri& uri) : m_uri(uri) {}

  // Asks the seeds (in order) for the slot map; an ACL user's probes go
  // to the first master (server_check.hpp). "" or one line for the user.
  std::string open(int64_t deadline);

  // A script on the master of `slot`: EVALSHA (EVAL when NOSCRIPT)
  // declaring `route_keys` (all in `slot`: they route the call, and while
  // the slot migrates a node refuses it, TRYAGAIN, unless it has all of
  // them), the script's own `keys` and `args` sent as lua/common.lua's
  // "+keys" tail. In `keys`, k_marker stands for the node's marker; the
  // last of `args` is the server run, set to the node's. `ping_first`: a
  // PING in the same write (RedisBackend::release()), its answer dropped.
  Exchange script(int slot, const lua::Script& s, const std::vector<std::string>& route_keys,
                  const std::vector<std::string>& keys, std::vector<std::string> args,
                  int64_t deadline, bool ping_first = false);

  // The masters ("host:port"), from a fresh slot map: a listing asks each.
  std::vector<std::string> masters(int64_t deadline, std::string& error);
  // Commands on one master (SCAN), or a script there that declares no key
  // and reads `keys` of that node's slots (the listing scripts).
  Exchange call_on(const std::string& master, const std::vector<Command>& commands,
                   int64_t deadline);
  Exchange script_on(const std::string& master, const lua::Script& s,
                     const std::vector<std::string>& keys, std::vector<std::string> args,
                     int64_t deadline);

  // Connects `c` (a subscription) to the master of `slot`; "" or why not.
  // `where`: that master.
  std::string connect_subscriber(Connection& c, int slot, int64_t deadline, std::string& where);
  // A MOVED that another connection got (a subscription's): the map learns it.
  void learn_redirect(const std::string& error_text);
  // The master of `slot` as last known ("" none).
  std::string where_of(int slot) const;

private:
  struct Node {
    ClusterNode address;
    std::string name;
    Connection conn;
    std::string run_id; // INFO server at connect
    // "simba:server{TAG}", TAG in the node's lowest slot, and where it may
    // have been before (lua/common.lua: read_marker), for `marker_ranges`.
    std::string marker;
    std::vector<std::string> markers_before;
    std::vector<int> marker_ranges;
  };
  Node& node(const ClusterNode& a);
  Node* node_named(const std::string& name);
  RedisUri node_uri(const ClusterNode& a) const;
  // Sets n.marker and n.markers_before from the map (`slot`: the call's,
  // for a node that serves none yet but imports it).
  void place_marker(Node& n, int slot);
  // Connects when not connected (or stale); "" or why not.
  std::string ensure(Node& n, int64_t deadline, bool verify = false);
  // CLUSTER SLOTS from the masters known, then the seeds; "" or why not.
  std::string discover(int64_t deadline);
  // The command list for one try on `n`.
  std::vector<Command> script_commands(Node& n, const lua::Script& s, bool eval,
                                       const std::vector<std::string>& route_keys,
                                       const std::vector<std::string>& keys,
                                       std::vector<std::string>& args) const;
  // Where one routed call stands between its hops.
  struct Hop {
    int slot = -1;
    bool asking = false; // the next hop goes to ask_target, after ASKING
    bool eval = false;   // the next hop sends the script's text (NOSCRIPT)
    int moved = 0;       // MOVED replies so far
    ClusterNode ask_target;
  };
  Node* target(int slot, const std::string& fixed, const Hop& h, int64_t deadline,
               std::string& why);
  Exchange send(Node& n, const lua::Script* s, const std::vector<std::string>& route_keys,
                const std::vector<std::string>& keys, std::vector<std::string>& args,
                const std::vector<Command>& plain, const Hop& h, bool ping, int64_t deadline);
  bool redirected(const redisReply* last, const Node& n, Hop& h, int64_t deadline);
  // One call routed by `slot` (-1: on `fixed`), redirections followed.
  Exchange routed(int slot, const std::string& fixed, const lua::Script* s,
                  const std::vector<std::string>& route_keys, const std::vector<std::string>& keys,
                  std::vector<std::string>& args, const std::vector<Command>& plain,
                  int64_t deadline, bool ping_first);
  std::string describe_failure(const Node& n, const std::string& err, int64_t budget_ms) const;

  RedisUri m_uri;
  SlotMap m_map;
  std::vector<std::unique_ptr<Node>> m_nodes;
};

} // namespace simba::backend::redis
