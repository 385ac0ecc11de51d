// The first requests of a connection and the checks of the server
// (server_check.hpp).
#include "backend/redis/server_check.hpp"

#include "backend/net/deadline_io.hpp"
#include "backend/redis/client.hpp"
#include "core/duration.hpp"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace simba::backend::redis {
namespace {

// An ACL user (README and docs/backends/redis.md "ACL users") is checked when simba starts, in the
// same write: may it run scripts on its keys and publish on its channels?
// (INFO and, with Sentinel, ROLE and INFO replication are in that write
// anyway: their NOPERM is named the same way.)
// A NOPERM later would be a lease that cannot be released or handed over.
// Each probe changes nothing: a script that is not there (NOSCRIPT proves
// the permission), one that returns 0, a message on a channel that no
// mutex has (no mutex name is empty).
void append_acl_probes(std::vector<Command>& hello, const RedisUri& uri) {
  std::string none = uri.prefix + "{}";
  hello.push_back({"EVALSHA", std::string(40, '0'), "3", none, none + ":fence", k_marker});
  hello.push_back({"EVAL", "return 0", "0"});
  // A cluster's scripts publish with SPUBLISH (lua/common.lua: PUBLISH).
  hello.push_back({uri.cluster.seeds.empty() ? "PUBLISH" : "SPUBLISH",
                   none + ":db" + std::to_string(uri.db) + ":acl-check", ""});
}

std::vector<Command> hello_commands(const RedisUri& uri, bool select, bool verify) {
  std::vector<Command> hello;
  if (!uri.password.empty()) {
    if (uri.user.empty())
      hello.push_back({"AUTH", uri.password});
    else
      hello.push_back({"AUTH", uri.user, uri.password});
  }
  if (select && uri.db != 0) hello.push_back({"SELECT", std::to_string(uri.db)});
  // The main connection learns which server run it talks to, and whether
  // that server may evict a lease, in the same write: no round trip of
  // its own (its answer also proves that a Redis answers).
  if (select) {
    hello.push_back({"INFO", "server"});
    hello.push_back({"INFO", "memory"});
  }
  // Sentinel: every connection proves it talks to the master, and the main
  // one adds the replication id to the server run (sentinel.hpp).
  if (!uri.sentinel.nodes.empty()) {
    hello.push_back({"ROLE"});
    if (select) hello.push_back({"INFO", "replication"});
  }
  if (hello.empty() && verify) hello.push_back({"PING"});
  if (select && verify && !uri.user.empty()) append_acl_probes(hello, uri);
  return hello;
}

// INFO server: the run_id the scripts compare with the database's marker
// (lua/common.lua: quarantine_end), and the version the scripts need.
std::string learn_server(const std::string& info, const std::string& where, std::string& run_id) {
  std::string id = info_field(info, "run_id");
  std::string version = info_field(info, "redis_version");
  if (id.empty() || version.empty()) return where + " does not answer like a Redis server";
  // The scripts read TIME and then write: Redis replicates such a script by
  // its effects, not by its text (a replica would read another TIME), only
  // from 5.0 on by default (redis.replicate_commands() before).
  if (std::atoi(version.c_str()) < k_min_redis_major)
    return "Redis at " + where + " is version " + version + ": simba needs Redis " +
           std::to_string(k_min_redis_major) + ".0 or newer";
  run_id = id;
  return "";
}

// INFO memory: an allkeys-* policy may evict a running lease (any key
// may go), and nothing would tell. The volatile-* policies take only keys
// with a TTL, and simba's leases have none.
std::string check_eviction(const std::string& info, const std::string& where) {
  std::string policy = info_field(info, "maxmemory_policy");
  if (policy.rfind("allkeys-", 0) == 0)
    return "Redis at " + where + " has maxmemory-policy " + policy +
           ", which may evict a running lease: use noeviction or a volatile-* policy";
  return "";
}

// Sentinel: ROLE's first element, "master", else the sentinel that named
// this server is behind a failover (or the server is).
std::string check_role(const redisReply* r, const RedisUri& uri, const std::string& where) {
  std::string role;
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || !as_string(r->element[0], role))
    return where + " does not answer ROLE like a Redis server";
  if (role == "master") return "";
  if (role == "slave") role = "replica";
  return "Redis at " + where + " is a " + role + ", not the master '" + uri.sentinel.master + "'";
}

// Why the answer to hello[i] refuses the connection, or "".
std::string refusal(const Command& hello, const redisReply* r, const RedisUri& uri,
                    const std::string& where, std::string& run_id) {
  const std::string& cmd = hello[0];
  std::string text = scrub(reply_text(r), uri.password);
  bool probe = cmd == "EVALSHA" || cmd == "EVAL" || cmd == "PUBLISH" || cmd == "SPUBLISH";
  // The probes, and what simba sends itself (INFO; ROLE with Sentinel).
  if (is_error(r) && text.rfind("NOPERM", 0) == 0)
    return "Redis at " + where + ": user " + (uri.user.empty() ? "default" : uri.user) +
           " lacks what simba needs (README \"ACL users\"): " + text;
  // NOSCRIPT says EVALSHA may run; a busy or loading server answers later;
  // a cluster node's MOVED or CROSSSLOT comes after the ACL's check.
  if (probe) return "";
  if (is_error(r)) {
    if (text.rfind("NOAUTH", 0) == 0)
      return "Redis at " + where + " requires a password: give it in " + k_redis_password_env;
    if (cmd == "AUTH") return "Redis at " + where + " refused the password: " + text;
    if (cmd == "SELECT")
      return "Redis at " + where + " refused database " + std::to_string(uri.db) + ": " + text;
    return "Redis at " + where + ": " + text;
  }
  if (cmd == "PING" && text != "PONG") return where + " does not answer like a Redis server";
  if (cmd == "ROLE") return check_role(r, uri, where);
  if (cmd == "INFO" && hello[1] == "replication") {
    std::string replid = info_field(text, "master_replid");
    if (replid.empty()) return where + " does not answer like a Redis server";
    run_id += ":" + replid;
    return "";
  }
  if (cmd == "INFO")
    return hello[1] == "server" ? learn_server(text, where, run_id) : check_eviction(text, where);
  return "";
}

} // namespace

std::string check_server(Connection& c, const RedisUri& uri, const std::string& where,
                         int64_t deadline, bool select, bool verify, std::string& run_id,
                         bool* for_now) {
  if (for_now) *for_now = false;
  std::vector<Command> hello = hello_commands(uri, select, verify);
  if (hello.empty()) return "";
  return check_hello(c, uri, where, hello, c.exchange(hello, deadline), run_id, for_now);
}

bool refused_for_now(const std::string& error_reply) {
  for (const char* code : {"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN"}) {
    size_t n = std::strlen(code);
    if (error_reply.compare(0, n, code) == 0 && (error_reply.size() == n || error_reply[n] == ' '))
      return true;
  }
  return false;
}

bool hello_can_wait(const RedisUri& uri) {
  return uri.password.empty() && uri.db == 0 && uri.sentinel.nodes.empty() && uri.quarantine;
}

std::vector<Command> main_hello(const RedisUri& uri) { return hello_commands(uri, true, true); }

std::string check_hello(Connection& c, const RedisUri& uri, const std::string& where,
                        const std::vector<Command>& hello, const Exchange& x, std::string& run_id,
                        bool* for_now) {
  if (for_now) *for_now = false;
  if (!x.ok) {
    if (x.error == net::k_timed_out)
      return "no answer from Redis at " + where + " within " +
             core::format_duration(uri.timeout_ms) + " (is a Redis server listening there?)";
    // A TLS server resets a connection that does not start with a
    // handshake (connection.cpp says the reverse).
    std::string hint;
    if (!uri.tls && x.error.find("reset by peer") != std::string::npos)
      hint = " (if that port speaks TLS, use rediss://)";
    return scrub("cannot talk to Redis at " + where + ": " + x.error + hint, uri.password);
  }
  for (size_t i = 0; i < hello.size(); ++i) {
    const redisReply* r = x.replies[i].get();
    std::string why = refusal(hello[i], r, uri, where, run_id);
    if (!why.empty()) {
      if (for_now) *for_now = is_error(r) && refused_for_now(reply_text(r));
      c.close();
      return why;
    }
  }
  return "";
}

} // namespace simba::backend::redis
