// Calls routed over a Redis Cluster (cluster_route.hpp).
#include "backend/redis/cluster_route.hpp"

#include "backend/net/deadline_io.hpp"
#include "backend/redis/client.hpp"
#include "backend/redis/server_check.hpp"
#include "core/duration.hpp"
#include "sys/clock.hpp"

#include <poll.h>

#include <algorithm>

namespace simba::backend::redis {
namespace {

// Tries one call makes at most (after MOVED, ASK, TRYAGAIN, a master that
// went away; those that wait count too): the call's deadline ends it first
// in all but a map that keeps changing without pause.
constexpr int k_max_hops = 64;
// TRYAGAIN: a slot's keys are moving; the migration of one slot takes
// milliseconds.
constexpr int64_t k_try_again_ms = 20;
// A master that cannot be reached: the cluster's failover takes its
// node-timeout; ask for the map again this often until the deadline.
constexpr int64_t k_rediscover_ms = 100;

void pause_ms(int64_t ms, int64_t deadline) {
  ms = std::min(ms, deadline - sys::boottime_ms());
  if (ms > 0) ::poll(nullptr, 0, int(ms));
}

Exchange failure(std::string why, Reach reach = Reach::not_sent) {
  Exchange x;
  x.reach = reach;
  x.error = std::move(why);
  return x;
}

} // namespace

RedisUri ClusterRoute::node_uri(const ClusterNode& a) const {
  RedisUri u = m_uri;
  u.host = a.host;
  u.port = a.port;
  return u;
}

ClusterRoute::Node& ClusterRoute::node(const ClusterNode& a) {
  for (auto& n : m_nodes)
    if (n->address.host == a.host && n->address.port == a.port) return *n;
  auto n = std::make_unique<Node>();
  n->address = a;
  n->name = a.name();
  m_nodes.push_back(std::move(n));
  return *m_nodes.back();
}

ClusterRoute::Node* ClusterRoute::node_named(const std::string& name) {
  for (auto& n : m_nodes)
    if (n->name == name) return n.get();
  return nullptr;
}

void ClusterRoute::place_marker(Node& n, int slot) {
  std::vector<int> ends = m_map.range_ends_of(n.name);
  if (ends.empty()) ends.push_back(std::max(slot, 0)); // importing its first slot
  if (ends == n.marker_ranges && !n.marker.empty()) return;
  auto key = [](int s) { return "simba:server{" + tag_for_slot(s) + "}"; };
  n.marker = key(ends[0]);
  n.markers_before.clear();
  for (size_t i = 1; i < ends.size(); ++i) n.markers_before.push_back(key(ends[i]));
  n.marker_ranges = ends;
}

std::string ClusterRoute::ensure(Node& n, int64_t deadline, bool verify) {
  if (n.conn.is_open() && n.conn.stale()) n.conn.close();
  if (n.conn.is_open()) return "";
  RedisUri u = node_uri(n.address);
  std::string err = n.conn.connect(u, deadline);
  if (!err.empty()) return scrub("cannot connect to Redis at " + n.name + ": " + err, u.password);
  return check_server(n.conn, u, n.name, deadline, true, verify, n.run_id);
}

std::string ClusterRoute::discover(int64_t deadline) {
  std::vector<ClusterNode> ask = m_map.masters();
  for (const RedisSentinels::Node& s : m_uri.cluster.seeds) ask.push_back({s.host, s.port});
  std::string first_error;
  for (const ClusterNode& a : ask) {
    if (sys::boottime_ms() >= deadline) break;
    Node& n = node(a);
    std::string err = ensure(n, deadline);
    if (err.empty()) {
      Exchange x = n.conn.exchange({{"CLUSTER", "SLOTS"}}, deadline);
      if (!x.ok) {
        n.conn.close();
        err = describe_failure(n, x.error, 0);
      } else if (is_error(x.replies[0].get())) {
        err = "Redis at " + n.name +
              " is no cluster node (redis+cluster:// needs cluster-enabled yes): " +
              scrub(reply_text(x.replies[0].get()), m_uri.password);
      } else if (!m_map.read(x.replies[0].get(), a)) {
        err = "Redis at " + n.name + " answered CLUSTER SLOTS with no slot map";
      } else {
        return "";
      }
    }
    if (first_error.empty()) first_error = err;
  }
  return first_error.empty() ? "no Redis Cluster node answered in time" : first_error;
}

std::string ClusterRoute::open(int64_t deadline) {
  std::string err = discover(deadline);
  if (!err.empty()) return err;
  std::vector<ClusterNode> masters = m_map.masters();
  if (masters.empty()) return "the Redis Cluster serves no slot";
  // Every node gets the checks a lone server gets (version, eviction) when
  // first used; an ACL user's probes go to the first master, once.
  if (m_uri.user.empty()) return "";
  Node& n = node(masters[0]);
  n.conn.close();
  return ensure(n, deadline, true);
}

std::vector<Command> ClusterRoute::script_commands(Node& n, const lua::Script& s, bool eval,
                                                   const std::vector<std::string>& route_keys,
                                                   const std::vector<std::string>& keys,
                                                   std::vector<std::string>& args) const {
  if (!args.empty()) args.back() = m_uri.quarantine ? n.run_id : "";
  Command cmd{eval ? "EVAL" : "EVALSHA", eval ? s.text : s.sha1, std::to_string(route_keys.size())};
  cmd.insert(cmd.end(), route_keys.begin(), route_keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  bool marker = false;
  for (const std::string& k : keys) {
    cmd.push_back(k == k_marker ? n.marker : k);
    marker = marker || k == k_marker;
  }
  size_t before = marker ? n.markers_before.size() : 0;
  if (marker) cmd.insert(cmd.end(), n.markers_before.begin(), n.markers_before.end());
  cmd.push_back("+keys " + std::to_string(keys.size() + before) + " " + std::to_string(before));
  return {cmd};
}

// The node a hop goes to: ASK's target, `fixed`, or the master of `slot`
// (the map asked again when it has none); nullptr and `why` when none.
ClusterRoute::Node* ClusterRoute::target(int slot, const std::string& fixed, const Hop& h,
                                         int64_t deadline, std::string& why) {
  if (h.asking) return &node(h.ask_target);
  if (slot < 0) {
    Node* n = node_named(fixed);
    if (!n) why = "Redis at " + fixed + " is no longer a master of the cluster";
    return n;
  }
  const ClusterNode* owner = m_map.owner(slot);
  if (!owner) {
    std::string err = discover(deadline);
    owner = m_map.owner(slot);
    if (!owner) {
      why = err.empty() ? "no master of the Redis Cluster serves slot " + std::to_string(slot)
                        : err;
      return nullptr;
    }
  }
  return &node(*owner);
}

// One hop's commands on `n` (ASKING, PING first when asked for), sent; the
// replies of what went before the call itself are dropped, unless one of
// them refused (NOAUTH...): then that refusal is the answer.
Exchange ClusterRoute::send(Node& n, const lua::Script* s,
                            const std::vector<std::string>& route_keys,
                            const std::vector<std::string>& keys, std::vector<std::string>& args,
                            const std::vector<Command>& plain, const Hop& h, bool ping,
                            int64_t deadline) {
  place_marker(n, h.slot);
  std::vector<Command> cmds;
  if (h.asking) cmds.push_back({"ASKING"});
  if (ping) cmds.push_back({"PING"});
  if (s) {
    std::vector<Command> c = script_commands(n, *s, h.eval, route_keys, keys, args);
    cmds.insert(cmds.end(), c.begin(), c.end());
  } else {
    cmds.insert(cmds.end(), plain.begin(), plain.end());
  }
  size_t drop = cmds.size() - (s ? 1 : plain.size());
  Exchange x = n.conn.exchange(cmds, deadline);
  if (!x.ok) return x;
  for (size_t i = 0; i < drop; ++i)
    if (is_error(x.replies[i].get())) {
      std::swap(x.replies[i], x.replies.back());
      break;
    }
  x.replies.erase(x.replies.begin(), x.replies.begin() + long(drop));
  return x;
}

// A script's error reply that sends the call elsewhere (MOVED, ASK,
// TRYAGAIN) or asks for the script's text (NOSCRIPT): `h` updated for the
// next hop, true. Any other reply is the answer: false.
bool ClusterRoute::redirected(const redisReply* last, const Node& n, Hop& h, int64_t deadline) {
  if (!is_error(last)) return false;
  std::string text = reply_text(last);
  Redirect r = read_redirect(text);
  if (r.kind != Redirect::Kind::none && r.kind != Redirect::Kind::try_again && r.node.host.empty())
    r.node.host = n.address.host; // "MOVED 42 :7001": the same host
  if (r.kind == Redirect::Kind::moved) {
    m_map.move(r.slot, r.node);
    h.asking = false;
    // A second MOVED in one call: the masters disagree for a moment (a
    // migration's SETSLOT NODE reached one and not yet the other), and
    // would send us back and forth: let them settle.
    if (++h.moved > 1) pause_ms(k_try_again_ms, deadline);
    return true;
  }
  if (r.kind == Redirect::Kind::ask && !h.asking) {
    h.asking = true;
    h.ask_target = r.node;
    return true;
  }
  if (r.kind == Redirect::Kind::try_again) {
    h.asking = false;
    pause_ms(k_try_again_ms, deadline);
    return true;
  }
  if (!h.eval && text.rfind("NOSCRIPT", 0) == 0) {
    h.eval = true; // the same node again (with ASKING again when asked)
    return true;
  }
  return false;
}

Exchange ClusterRoute::routed(int slot, const std::string& fixed, const lua::Script* s,
                              const std::vector<std::string>& route_keys,
                              const std::vector<std::string>& keys, std::vector<std::string>& args,
                              const std::vector<Command>& plain, int64_t deadline,
                              bool ping_first) {
  int64_t budget_ms = std::max<int64_t>(1, deadline - sys::boottime_ms());
  Hop h;
  h.slot = slot;
  bool resent = false;
  std::string last_error;
  for (int hop = 0; hop < k_max_hops && sys::boottime_ms() < deadline; ++hop) {
    std::string why;
    Node* n = target(slot, fixed, h, deadline, why);
    if (!n) return failure(why);
    std::string err = ensure(*n, deadline);
    if (!err.empty()) {
      // Nothing was sent. A master that went away may have been replaced
      // by its replica: ask for the map again, after a pause.
      last_error = err;
      if (slot < 0) return failure(err);
      h.asking = false;
      pause_ms(k_rediscover_ms, deadline);
      discover(deadline);
      continue;
    }
    bool ping = ping_first && !h.asking && hop == 0;
    Exchange x = send(*n, s, route_keys, keys, args, plain, h, ping, deadline);
    if (!x.ok) {
      n->conn.close();
      // A dead connection that refused the request before any byte left:
      // once more, on a fresh one (as Client::call()).
      if (x.reach == Reach::not_sent && !resent) {
        resent = true;
        continue;
      }
      x.error = describe_failure(*n, x.error, budget_ms);
      return x;
    }
    if (s && redirected(x.replies.back().get(), *n, h, deadline)) continue;
    return x;
  }
  if (!last_error.empty()) return failure(last_error);
  return failure("no answer from the Redis Cluster within " + core::format_duration(budget_ms) +
                 (slot >= 0 ? " (slot " + std::to_string(slot) + " kept moving)" : ""));
}

Exchange ClusterRoute::script(int slot, const lua::Script& s,
                              const std::vector<std::string>& route_keys,
                              const std::vector<std::string>& keys, std::vector<std::string> args,
                              int64_t deadline, bool ping_first) {
  return routed(slot, "", &s, route_keys, keys, args, {}, deadline, ping_first);
}

std::vector<std::string> ClusterRoute::masters(int64_t deadline, std::string& error) {
  error = discover(deadline);
  std::vector<std::string> out;
  if (!error.empty()) return out;
  for (const ClusterNode& a : m_map.masters()) out.push_back(node(a).name);
  return out;
}

Exchange ClusterRoute::call_on(const std::string& master, const std::vector<Command>& commands,
                               int64_t deadline) {
  std::vector<std::string> none;
  return routed(-1, master, nullptr, none, none, none, commands, deadline, false);
}

Exchange ClusterRoute::script_on(const std::string& master, const lua::Script& s,
                                 const std::vector<std::string>& keys,
                                 std::vector<std::string> args, int64_t deadline) {
  return routed(-1, master, &s, {}, keys, args, {}, deadline, false);
}

std::string ClusterRoute::connect_subscriber(Connection& c, int slot, int64_t deadline,
                                             std::string& where) {
  const ClusterNode* owner = m_map.owner(slot);
  if (!owner) {
    std::string err = discover(deadline);
    owner = m_map.owner(slot);
    if (!owner) return err.empty() ? "no master serves the slot" : err;
  }
  RedisUri u = node_uri(*owner);
  where = owner->name();
  std::string err = c.connect(u, deadline);
  if (!err.empty()) return scrub("cannot connect to Redis at " + where + ": " + err, u.password);
  std::string run_id;
  return check_server(c, u, where, deadline, false, false, run_id);
}

void ClusterRoute::learn_redirect(const std::string& error_text) {
  Redirect r = read_redirect(error_text);
  if (r.kind == Redirect::Kind::moved && !r.node.host.empty()) m_map.move(r.slot, r.node);
}

std::string ClusterRoute::where_of(int slot) const {
  const ClusterNode* owner = m_map.owner(slot);
  return owner ? owner->name() : "";
}

std::string ClusterRoute::describe_failure(const Node& n, const std::string& err,
                                           int64_t budget_ms) const {
  if (err == net::k_timed_out)
    return "no answer from Redis at " + n.name + " within " + core::format_duration(budget_ms);
  return scrub("Redis at " + n.name + ": " + err, m_uri.password);
}

} // namespace simba::backend::redis
