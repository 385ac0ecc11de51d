// Asking a sentinel for the master (sentinel.hpp).
#include "backend/redis/sentinel.hpp"

#include "backend/net/deadline_io.hpp"
#include "backend/redis/connection.hpp"
#include "sys/clock.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace simba::backend::redis {

SentinelAnswer ask_sentinel(const RedisUri& uri, const RedisSentinels::Node& node,
                            int64_t deadline) {
  SentinelAnswer a;
  RedisUri at = uri;
  at.host = node.host;
  at.port = node.port;
  at.unix_socket = false;
  std::string where = "sentinel " + redis_where(at);
  Connection c;
  std::string err = c.connect(at, deadline);
  if (!err.empty()) {
    a.error = where + ": " + err;
    return a;
  }
  // The sentinels get no password: user and password are the master's.
  Exchange x = c.exchange({{"SENTINEL", "get-master-addr-by-name", uri.sentinel.master}}, deadline);
  if (!x.ok) {
    a.error = where + ": " + (x.error == net::k_timed_out ? "no answer in time" : x.error);
    return a;
  }
  const redisReply* r = x.replies[0].get();
  if (is_error(r)) {
    a.error = where + ": " + scrub(reply_text(r), uri.password);
    return a;
  }
  std::string port;
  if (r->type == REDIS_REPLY_NIL) {
    a.reached = true;
  } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && as_string(r->element[0], a.host) &&
             as_string(r->element[1], port) && !a.host.empty() &&
             (a.port = std::atoi(port.c_str())) > 0) {
    a.reached = a.known = true;
  } else {
    a.error = where + " does not answer like a Redis sentinel";
  }
  return a;
}

std::string ask_sentinels(const RedisUri& uri, int64_t deadline,
                          const std::function<bool(const SentinelAnswer&)>& take) {
  // A copy: `take` may move the URI's host and port (the master's).
  const RedisUri asked = uri;
  const std::vector<RedisSentinels::Node>& nodes = asked.sentinel.nodes;
  const size_t majority = nodes.size() / 2 + 1;
  std::vector<std::pair<std::string, size_t>> votes; // "host:port", sentinels naming it
  bool unknown = false;
  std::string first_error;
  for (size_t i = 0; i < nodes.size(); ++i) {
    int64_t now = sys::boottime_ms();
    if (now >= deadline) break;
    int64_t share = std::max<int64_t>(1, (deadline - now) / static_cast<int64_t>(nodes.size() - i));
    SentinelAnswer a = ask_sentinel(asked, nodes[i], now + share);
    unknown = unknown || (a.reached && !a.known);
    if (!a.known) {
      if (first_error.empty()) first_error = a.error;
      continue;
    }
    std::string address = a.host + ":" + std::to_string(a.port);
    auto it = std::find_if(votes.begin(), votes.end(),
                           [&](const auto& v) { return v.first == address; });
    if (it == votes.end()) it = votes.insert(votes.end(), {address, 0});
    ++it->second;
    // Only one address can be named by a majority: when its server will not
    // take us, there is no other to try.
    if (it->second == majority) return take(a) ? "" : "refused";
  }
  if (votes.empty()) return no_master_message(asked, unknown, first_error);
  std::string named;
  for (const auto& [address, count] : votes)
    named += (named.empty() ? "" : ", ") + address + " by " + std::to_string(count);
  return "cannot find the Redis master '" + asked.sentinel.master + "': no majority of its " +
         std::to_string(nodes.size()) + " sentinels names one (" + named +
         "; a failover under way, or sentinels cut off)";
}

std::string no_master_message(const RedisUri& uri, bool unknown, const std::string& first_error) {
  std::string why = first_error.empty() ? "" : " (" + first_error + ")";
  if (unknown) return "no sentinel knows a master named '" + uri.sentinel.master + "'" + why;
  return "cannot find the Redis master '" + uri.sentinel.master + "': no sentinel answers" + why;
}

} // namespace simba::backend::redis
