// Redis Cluster's addressing (cluster_slots.hpp).
#include "backend/redis/cluster_slots.hpp"

#include "backend/redis/reply.hpp"

#include <array>
#include <cstdlib>

namespace simba::backend::redis {
namespace {

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), the cluster's key
// hash, a byte at a time through a table made on first use
// (tag_for_slot() hashes some ten thousand short tags per marker).
uint16_t crc16(const char* p, size_t n) {
  static const std::array<uint16_t, 256> table = [] {
    std::array<uint16_t, 256> t{};
    for (unsigned i = 0; i < 256; ++i) {
      uint16_t crc = static_cast<uint16_t>(i << 8);
      for (int b = 0; b < 8; ++b)
        crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
      t[i] = crc;
    }
    return t;
  }();
  uint16_t crc = 0;
  for (size_t i = 0; i < n; ++i)
    crc = static_cast<uint16_t>((crc << 8) ^
                                table[((crc >> 8) ^ static_cast<unsigned char>(p[i])) & 0xff]);
  return crc;
}

// "host:port" ("[v6]:port"); false when it is not one.
bool read_address(const std::string& s, ClusterNode& n) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon + 1 >= s.size()) return false;
  std::string host = s.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  int port = std::atoi(s.c_str() + colon + 1);
  if (port <= 0 || port > 65535) return false;
  n.host = host;
  n.port = port;
  return true;
}

} // namespace

int key_slot(const std::string& key) {
  size_t open = key.find('{');
  if (open != std::string::npos) {
    size_t close = key.find('}', open + 1);
    if (close != std::string::npos && close > open + 1)
      return crc16(key.data() + open + 1, close - open - 1) % k_cluster_slots;
  }
  return crc16(key.data(), key.size()) % k_cluster_slots;
}

std::string tag_for_slot(int slot) {
  // 16384 slots: among the first million numbers each slot has ~60 tags.
  for (unsigned i = 0;; ++i) {
    std::string tag = std::to_string(i);
    if (crc16(tag.data(), tag.size()) % k_cluster_slots == unsigned(slot)) return tag;
  }
}

std::string ClusterNode::name() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

int SlotMap::index_of(const ClusterNode& n) {
  for (size_t i = 0; i < m_nodes.size(); ++i)
    if (m_nodes[i].host == n.host && m_nodes[i].port == n.port) return int(i);
  m_nodes.push_back(n);
  return int(m_nodes.size() - 1);
}

// Each element: first slot, last slot, then the master [host, port, id,
// ...] and its replicas (not used: simba talks to masters only).
bool SlotMap::read(const redisReply* r, const ClusterNode& asked) {
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements == 0) return false;
  SlotMap next;
  for (size_t i = 0; i < r->elements; ++i) {
    const redisReply* e = r->element[i];
    int64_t first = 0, last = 0, port = 0;
    std::string host;
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || !as_int(e->element[0], first) ||
        !as_int(e->element[1], last) || first < 0 || last >= k_cluster_slots || first > last)
      return false;
    const redisReply* m = e->element[2];
    if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 || !as_string(m->element[0], host) ||
        !as_int(m->element[1], port) || port <= 0 || port > 65535)
      return false;
    ClusterNode n{host, int(port)};
    if (host.empty() || host == "?") n.host = asked.host;
    int at = next.index_of(n);
    for (int64_t s = first; s <= last; ++s) next.m_owner[size_t(s)] = at;
  }
  *this = std::move(next);
  return true;
}

const ClusterNode* SlotMap::owner(int slot) const {
  int at = m_owner[size_t(slot)];
  return at < 0 ? nullptr : &m_nodes[size_t(at)];
}

void SlotMap::move(int slot, const ClusterNode& node) { m_owner[size_t(slot)] = index_of(node); }

std::vector<ClusterNode> SlotMap::masters() const {
  std::vector<bool> serves(m_nodes.size(), false);
  for (int at : m_owner)
    if (at >= 0) serves[size_t(at)] = true;
  std::vector<ClusterNode> out;
  for (size_t i = 0; i < m_nodes.size(); ++i)
    if (serves[i]) out.push_back(m_nodes[i]);
  return out;
}

std::vector<int> SlotMap::range_ends_of(const std::string& name) const {
  std::vector<int> out;
  int node = -1;
  for (size_t i = 0; i < m_nodes.size(); ++i)
    if (m_nodes[i].name() == name) node = int(i);
  if (node < 0) return out;
  for (int s = 0; s < k_cluster_slots; ++s) {
    if (m_owner[size_t(s)] != node) continue;
    int first = s;
    while (s + 1 < k_cluster_slots && m_owner[size_t(s + 1)] == node) ++s;
    out.push_back(first);
    if (s != first) out.push_back(s);
  }
  return out;
}

Redirect read_redirect(const std::string& text) {
  Redirect r;
  if (text.rfind("TRYAGAIN", 0) == 0) {
    r.kind = Redirect::Kind::try_again;
    return r;
  }
  bool moved = text.rfind("MOVED ", 0) == 0, ask = text.rfind("ASK ", 0) == 0;
  if (!moved && !ask) return r;
  size_t a = text.find(' ');
  size_t b = text.find(' ', a + 1);
  if (b == std::string::npos) return r;
  int slot = std::atoi(text.c_str() + a + 1);
  std::string address = text.substr(b + 1);
  if (size_t end = address.find_first_of(" \r\n"); end != std::string::npos) address.resize(end);
  if (slot < 0 || slot >= k_cluster_slots || !read_address(address, r.node)) return r;
  r.slot = slot;
  r.kind = moved ? Redirect::Kind::moved : Redirect::Kind::ask;
  return r;
}

} // namespace simba::backend::redis
