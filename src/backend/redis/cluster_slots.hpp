#pragma once
// Redis Cluster's addressing, without I/O: the hash slot of a key, the
// slot map CLUSTER SLOTS answers, and the redirections a node answers with
// (MOVED, ASK). cluster_route.* does the talking.
#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>
#include <vector>

namespace simba::backend::redis {

constexpr int k_cluster_slots = 16384;

// The slot of `key`: CRC16 (XMODEM) of its hash tag (the text between the
// first '{' and the next '}', when not empty), else of the whole key.
int key_slot(const std::string& key);

// A short hash tag whose slot is `slot` ("{tag}" puts any key there).
std::string tag_for_slot(int slot);

// A master of the map: "host:port" as the cluster names it.
struct ClusterNode {
  std::string host;
  int port = 0;
  std::string name() const; // "host:port" ("[v6]:port")
};

// Which master serves each slot; -1: none known.
class SlotMap {
public:
  SlotMap() : m_owner(k_cluster_slots, -1) {}

  // Reads CLUSTER SLOTS' answer; false when it is not one (the map is
  // then unchanged). A node answering "" or "?" as its address is the one
  // asked (`asked`).
  bool read(const redisReply* r, const ClusterNode& asked);

  // The master of `slot`, or nullptr.
  const ClusterNode* owner(int slot) const;
  // A MOVED: `slot` is `node`'s now.
  void move(int slot, const ClusterNode& node);
  bool empty() const { return m_nodes.empty(); }
  // The masters that serve a slot, in the order first seen.
  std::vector<ClusterNode> masters() const;
  // The first and last slot of each range of slots `name` serves, in
  // order (empty: none); the lowest slot first.
  std::vector<int> range_ends_of(const std::string& name) const;

private:
  int index_of(const ClusterNode& n);
  std::vector<ClusterNode> m_nodes;
  std::vector<int> m_owner; // slot -> index in m_nodes
};

// A node's answer that sends the command elsewhere; nothing ran.
struct Redirect {
  enum class Kind { none, moved, ask, try_again } kind = Kind::none;
  int slot = -1;
  ClusterNode node;
};
// MOVED <slot> <host:port>, ASK <slot> <host:port>, TRYAGAIN (a
// multi-key command during a slot's migration), from an error's text.
Redirect read_redirect(const std::string& error_text);

} // namespace simba::backend::redis
