// simba doctor on Redis: what lies around the server (doctor.hpp): the
// sentinels' views of the master, a cluster's slots, the TLS certificate.
#include "backend/certificate_check.hpp"
#include "backend/redis/doctor_checks.hpp"
#include "backend/redis/sentinel.hpp"
#include "sys/clock.hpp"

#include <algorithm>
#include <map>

namespace simba::backend::redis {
namespace {

constexpr int k_slots = 16384;

// The other sentinels `node` knows for the master (SENTINEL SENTINELS:
// one flat array of names and values each), "host:port"; none when it
// does not answer.
std::vector<RedisSentinels::Node>
sentinels_known(const RedisUri& uri, const RedisSentinels::Node& node, int64_t deadline) {
  std::vector<RedisSentinels::Node> out;
  RedisUri at = uri;
  at.host = node.host;
  at.port = node.port;
  at.unix_socket = false;
  Connection c;
  if (!c.connect(at, deadline).empty()) return out;
  Exchange x = c.exchange({{"SENTINEL", "SENTINELS", uri.sentinel.master}}, deadline);
  if (!x.ok || x.replies[0]->type != REDIS_REPLY_ARRAY) return out;
  const redisReply* r = x.replies[0].get();
  for (size_t i = 0; i < r->elements; ++i) {
    const redisReply* s = r->element[i];
    RedisSentinels::Node n;
    std::string port;
    for (size_t k = 0; s->type == REDIS_REPLY_ARRAY && k + 1 < s->elements; k += 2) {
      std::string name;
      as_string(s->element[k], name);
      if (name == "ip") as_string(s->element[k + 1], n.host);
      if (name == "port") as_string(s->element[k + 1], port);
    }
    n.port = std::atoi(port.c_str());
    if (!n.host.empty() && n.port > 0) out.push_back(n);
  }
  return out;
}

std::string name_of(const RedisSentinels::Node& n) { return n.host + ":" + std::to_string(n.port); }

} // namespace

void check_sentinels(const RedisUri& uri, Diagnosis& found, int64_t deadline) {
  std::vector<RedisSentinels::Node> asked = uri.sentinel.nodes;
  size_t listed = asked.size();
  std::vector<std::string> unlisted;
  for (size_t i = 0; i < listed; ++i)
    for (const RedisSentinels::Node& n : sentinels_known(uri, asked[i], deadline)) {
      bool known = std::any_of(asked.begin(), asked.end(), [&](const RedisSentinels::Node& a) {
        return name_of(a) == name_of(n);
      });
      if (!known) {
        asked.push_back(n);
        unlisted.push_back(name_of(n));
      }
    }
  std::map<std::string, std::vector<std::string>> named; // master -> the sentinels naming it
  std::vector<std::string> silent, unknowing;
  for (const RedisSentinels::Node& n : asked) {
    SentinelAnswer a = ask_sentinel(uri, n, deadline);
    if (a.known)
      named[a.host + ":" + std::to_string(a.port)].push_back(name_of(n));
    else if (a.reached)
      unknowing.push_back(name_of(n));
    else
      silent.push_back(a.error);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& e : v) s += (s.empty() ? "" : ", ") + e;
    return s;
  };
  if (named.size() > 1) {
    std::string views;
    for (const auto& [master, by] : named)
      views += (views.empty() ? "" : "; ") + master + " by " + join(by);
    found.push_back(fail_finding(
        "sentinel",
        "the sentinels name different masters for '" + uri.sentinel.master + "': " + views,
        "if it lasts beyond a failover, the sentinels are cut off from each other: reconnect "
        "them (simba takes a master only when a majority of the listed sentinels name it)"));
    return;
  }
  if (named.empty() || !unknowing.empty()) {
    std::string why = named.empty() ? "no sentinel names a master '" + uri.sentinel.master + "'"
                                    : "sentinels " + join(unknowing) + " know no master '" +
                                          uri.sentinel.master + "'";
    if (!silent.empty()) why += " (" + join(silent) + ")";
    found.push_back(fail_finding("sentinel", why,
                                 "check the master's name in the URI and the sentinels' "
                                 "`sentinel monitor` lines"));
    return;
  }
  std::string master = named.begin()->first;
  if (!silent.empty()) {
    found.push_back(
        warn_finding("sentinel", "all that answer name " + master + ", but " + join(silent),
                     "bring the sentinel back: a majority of those listed must answer"));
  } else if (!unlisted.empty()) {
    found.push_back(warn_finding(
        "sentinel",
        "all name " + master + ", but the URI lists " + std::to_string(listed) + " of the " +
            std::to_string(asked.size()) + " sentinels (not " + join(unlisted) + ")",
        "list every sentinel in the URI on every host: the majority is of those listed"));
  } else {
    found.push_back(ok_finding("sentinel", "all " + std::to_string(asked.size()) +
                                               " sentinels name " + master));
  }
}

void check_cluster(DoctorLink& link, Diagnosis& found, int64_t deadline) {
  const char* fix = "serve every slot: add the missing ones, bring failed masters back "
                    "(redis-cli --cluster check, then fix)";
  Exchange x = link.ask(0, {{"CLUSTER", "INFO"}}, deadline);
  std::string error;
  const redisReply* r = link.client().answer(x, error);
  if (r) {
    std::string info = reply_text(r);
    std::string state = info_field(info, "cluster_state");
    int ok_slots = std::atoi(info_field(info, "cluster_slots_ok").c_str());
    std::string detail = "cluster_state " + state + ", " + std::to_string(ok_slots) + " of " +
                         std::to_string(k_slots) + " slots served (assigned " +
                         info_field(info, "cluster_slots_assigned") + ", failing " +
                         info_field(info, "cluster_slots_fail") + ")";
    if (state == "ok" && ok_slots == k_slots)
      found.push_back(ok_finding("cluster", detail));
    else
      found.push_back(fail_finding("cluster", detail, fix));
    return;
  }
  // CLUSTER INFO refused (simba's ACL grants CLUSTER SLOTS only): count
  // the slots the map covers.
  x = link.ask(0, {{"CLUSTER", "SLOTS"}}, deadline);
  r = link.client().answer(x, error);
  if (!r || r->type != REDIS_REPLY_ARRAY) {
    found.push_back(fail_finding("cluster", "cannot read the slot map: " + error, fix));
    return;
  }
  int64_t covered = 0;
  for (size_t i = 0; i < r->elements; ++i) {
    int64_t first = 0, last = -1;
    const redisReply* range = r->element[i];
    if (range->type == REDIS_REPLY_ARRAY && range->elements >= 2 &&
        as_int(range->element[0], first) && as_int(range->element[1], last))
      covered += last - first + 1;
  }
  std::string detail = std::to_string(covered) + " of " + std::to_string(k_slots) +
                       " slots have a master (CLUSTER SLOTS)";
  if (covered == k_slots)
    found.push_back(ok_finding("cluster", detail));
  else
    found.push_back(fail_finding("cluster", detail, fix));
}

// The chain and the name were verified when the connection opened (a
// failure ends it there: the connection check says why); what is left is
// how long the certificate has.
void check_tls(DoctorLink& link, Diagnosis& found, int64_t deadline) {
  const RedisUri& uri = link.client().uri();
  if (uri.tls_insecure) {
    found.push_back(warn_finding("tls",
                                 "?insecure=1: the server's certificate is not verified "
                                 "(neither its chain nor its name)",
                                 "give ?cacert=FILE, the CA that signed the server's certificate"));
    return;
  }
  for (size_t i = 0; i < link.servers().size(); ++i) {
    Connection c;
    std::string err = link.connect_fresh(i, c, deadline);
    std::string label = server_label(link, i);
    int64_t end = err.empty() && c.tls() ? c.tls()->peer_not_after() : -1;
    if (end < 0) {
      found.push_back(fail_finding(
          "tls", label + "cannot read the server's certificate" + (err.empty() ? "" : ": " + err),
          "check the TLS set-up (docs/backends/redis.md \"TLS\")"));
      continue;
    }
    // The name checked is the host the connection went to.
    std::string verified = "the certificate of " + link.servers()[i] + " is verified (against " +
                           (uri.tls_ca.empty() ? std::string("the system's CAs") : uri.tls_ca) +
                           ", and its name)";
    found.push_back(
        certificate_finding(label + verified, end, "tls-cert-file", sys::wall_ms() / 1000));
  }
}

} // namespace simba::backend::redis
