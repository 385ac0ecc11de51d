// simba doctor on Redis: what INFO tells of one server (doctor.hpp:
// persistence, maxmemory-policy, replication).
#include "backend/redis/doctor_checks.hpp"

namespace simba::backend::redis {
namespace {

constexpr const char* k_persistence = "persistence";
constexpr const char* k_policy = "maxmemory-policy";
constexpr const char* k_replication = "replication";

// CONFIG GET's value ("" when refused: an ACL user seldom may), and
// whether it was answered.
bool config_value(const redisReply* r, std::string& value) {
  if (is_error(r) || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return false;
  return as_string(r->element[1], value);
}

// INFO persistence: aof_enabled; the RDB schedule is only in CONFIG GET
// save, which an ACL user may not run.
Finding persistence(const std::string& info, const redisReply* save, const redisReply* fsync,
                    const std::string& user) {
  std::string schedule, every;
  if (info_field(info, "aof_enabled") == "1") {
    std::string how = config_value(fsync, every) ? " (appendfsync " + every + ")" : "";
    return ok_finding(k_persistence, "AOF on" + how +
                                         ": leases and fencing counters outlive a "
                                         "restart (simba quarantines after one anyway)");
  }
  const char* fix = "appendonly yes and appendfsync everysec in redis.conf (CONFIG SET appendonly "
                    "yes now), as docs/backends/redis.md sets up";
  if (!config_value(save, schedule))
    return warn_finding(k_persistence,
                        "AOF off, and whether RDB snapshots are on is unknown (CONFIG GET refused "
                        "to user " +
                            user + "): without either a restart loses every lease",
                        fix);
  if (schedule.empty())
    return warn_finding(k_persistence,
                        "no persistence (appendonly no, save \"\"): a restart loses every lease, "
                        "--once-per record and history; simba then quarantines every mutex for "
                        "the longest lease + 1 s",
                        fix);
  return ok_finding(k_persistence, "RDB snapshots (save " + schedule +
                                       "), AOF off: a restart loses the writes since the last "
                                       "snapshot; simba quarantines after one");
}

// INFO memory. Leases, fences and markers have no TTL (lua/common.lua);
// the waiters' queue and its names do (a day: lua/enqueue.lua).
Finding eviction(const std::string& info) {
  std::string policy = info_field(info, "maxmemory_policy");
  std::string limit = info_field(info, "maxmemory");
  std::string human = info_field(info, "maxmemory_human");
  bool limited = !limit.empty() && limit != "0";
  std::string fix = "CONFIG SET maxmemory-policy noeviction, and maxmemory-policy noeviction in "
                    "redis.conf";
  if (policy.empty()) return fail_finding(k_policy, "INFO memory names no maxmemory_policy", fix);
  if (policy.rfind("allkeys-", 0) == 0)
    return fail_finding(k_policy,
                        policy + ": the server may evict a running lease, and another host then "
                                 "gets the mutex beside its owner; simba refuses this server",
                        fix);
  if (policy.rfind("volatile-", 0) == 0 && limited)
    return warn_finding(k_policy,
                        policy + " at maxmemory " + human +
                            ": leases have no TTL and are never evicted, but a waiters' queue "
                            "(a TTL of a day) may be, and its waiters lose their place in line",
                        fix);
  std::string at = limited ? " (maxmemory " + human +
                                 ": at the limit writes fail, and an owner "
                                 "that cannot renew stops its command)"
                           : " (no maxmemory)";
  return ok_finding(k_policy, policy + at);
}

Finding role(const std::string& info) {
  std::string role = info_field(info, "role");
  if (role == "master")
    return ok_finding(k_replication,
                      "a master, " + info_field(info, "connected_slaves") + " replica(s)");
  if (role == "slave")
    return fail_finding(k_replication,
                        "a replica of " + info_field(info, "master_host") + ":" +
                            info_field(info, "master_port") +
                            ": it refuses simba's writes (READONLY)",
                        "point the URI at the master, or use redis+sentinel:// with the sentinels "
                        "that watch it");
  return fail_finding(k_replication, "INFO replication names no role", "check the server");
}

Finding labelled(Finding f, const std::string& label) {
  f.detail = label + f.detail;
  return f;
}

} // namespace

void check_server(DoctorLink& link, size_t i, Diagnosis& found, int64_t deadline) {
  Exchange x = link.ask(i,
                        {{"INFO", "persistence"},
                         {"INFO", "memory"},
                         {"INFO", "replication"},
                         {"CONFIG", "GET", "save"},
                         {"CONFIG", "GET", "appendfsync"}},
                        deadline);
  std::string label = server_label(link, i);
  if (!x.ok) {
    for (const char* check : {k_persistence, k_policy, k_replication})
      found.push_back(fail_finding(check, label + "cannot read INFO: " + x.error,
                                   "make the server answer, then run this again"));
    return;
  }
  const redisReply* info = x.replies[0].get();
  if (is_error(info)) {
    std::string why = label + "INFO refused: " + link.client().scrub(reply_text(info));
    for (const char* check : {k_persistence, k_policy, k_replication})
      found.push_back(fail_finding(check, why,
                                   "give the user +info (docs/backends/redis.md "
                                   "\"ACL users\")"));
    return;
  }
  const RedisUri& uri = link.client().uri();
  std::string user = uri.user.empty() ? "default" : uri.user;
  found.push_back(
      labelled(persistence(reply_text(info), x.replies[3].get(), x.replies[4].get(), user), label));
  found.push_back(labelled(eviction(reply_text(x.replies[1].get())), label));
  found.push_back(labelled(role(reply_text(x.replies[2].get())), label));
}

} // namespace simba::backend::redis
