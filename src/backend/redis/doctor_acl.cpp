// simba doctor on Redis: may the connected user do what simba does
// (doctor.hpp: acl)? ACL DRYRUN would say, but only to an admin; so the
// user itself tries: the commands simba sends, each harmless (a SCAN of one
// key, EVALSHA of a script that does not exist: NOSCRIPT proves the
// right), SUBSCRIBE on a connection of its own, and lua/acl_probe.lua for
// every command simba's scripts call, on scratch keys under the prefix and
// on the marker. A refusal names a command, a key or a channel; the fix is
// the ACL SETUSER that grants it (docs/backends/redis.md "ACL users").
#include "backend/redis/doctor_checks.hpp"

#include <algorithm>

namespace simba::backend::redis {
namespace {

constexpr const char* k_acl = "acl";
// A mutex name no user has: a space is refused in theirs (core/names.cpp).
const std::string k_probe_mutex = "doctor probe";

// What the user lacks, as ACL SETUSER grants it: "+lpush", "~simba:*"...
struct Lacks {
  std::vector<std::string> grants;
  std::vector<std::string> what; // for the detail: "lpush", "keys simba:*"
  void add(const std::string& grant, const std::string& said) {
    if (std::find(grants.begin(), grants.end(), grant) != grants.end()) return;
    grants.push_back(grant);
    what.push_back(said);
  }
};

// Whether `text` refuses a key, a channel or the command `name`, added to
// `lacks` as such; false when it is no refusal of the ACL.
bool note_refusal(const std::string& text, const std::string& name, const std::string& key_grant,
                  const std::string& channel_grant, Lacks& lacks) {
  if (!is_permission_error(text)) return false;
  if (text.find("key") != std::string::npos)
    lacks.add(key_grant, "keys " + key_grant.substr(1) + " (" + name + ")");
  else if (text.find("channel") != std::string::npos)
    lacks.add(channel_grant, "channels " + channel_grant.substr(1));
  else
    lacks.add("+" + name, name);
  return true;
}

struct Probe {
  std::string name; // the command as ACL names it
  Command command;
  bool marker = false; // its key is the marker
};

std::vector<Probe> direct_probes(const Client& c, const std::string& scratch, bool cluster) {
  const RedisUri& uri = c.uri();
  std::vector<Probe> p = {{"ping", {"PING"}},
                          {"scan", {"SCAN", "0", "MATCH", uri.prefix + "*", "COUNT", "1"}}};
  // Every script declares the mutex's keys and the marker: one key each,
  // so that a refusal says which pattern is missing. (A cluster node
  // refuses a key of a slot it does not serve after the ACL, but its
  // marker's name is the Client's to know: the probe script tries it.)
  std::string none(40, '0');
  p.push_back({"evalsha", {"EVALSHA", none, "1", scratch}});
  if (!cluster) p.push_back({"evalsha", {"EVALSHA", none, "1", k_marker}, true});
  if (!uri.sentinel.nodes.empty()) p.push_back({"role", {"ROLE"}});
  if (cluster) {
    p.push_back({"cluster|slots", {"CLUSTER", "SLOTS"}});
    p.push_back({"asking", {"ASKING"}});
    p.push_back({"ping", {"PING"}}); // what ASKING was for
  }
  return p;
}

// One run of the checks: what they found missing, and what kept one from
// being made.
struct AclRun {
  std::string keys, channels, marker_keys; // the patterns simba needs, as grants
  std::string scratch, channel;            // the probes' key and channel
  Lacks lacks;
  std::string trouble;
  void note(const std::string& text, const std::string& command, bool marker = false) {
    note_refusal(text, command, marker ? marker_keys : keys, channels, lacks);
  }
  void failed(const std::string& why) {
    if (trouble.empty()) trouble = why;
  }
};

void try_direct(DoctorLink& link, AclRun& run, int64_t deadline) {
  std::vector<Probe> probes = direct_probes(link.client(), run.scratch, link.cluster());
  std::vector<Command> commands;
  for (const Probe& p : probes) commands.push_back(p.command);
  Exchange x = link.ask(0, commands, deadline);
  if (!x.ok) run.failed(x.error);
  for (size_t i = 0; x.ok && i < probes.size(); ++i)
    if (is_error(x.replies[i].get()))
      run.note(reply_text(x.replies[i].get()), probes[i].name, probes[i].marker);
}

// Subscribing ends a connection's use for anything else: one of its own.
void try_subscribe(DoctorLink& link, AclRun& run, int64_t deadline) {
  Connection sub;
  std::string err = link.connect_fresh(0, sub, deadline);
  if (!err.empty()) return run.failed(err);
  bool sharded = link.cluster();
  Exchange s = sub.exchange({{sharded ? "SSUBSCRIBE" : "SUBSCRIBE", run.channel}}, deadline);
  if (!s.ok) return run.failed(s.error);
  if (is_error(s.replies[0].get()))
    run.note(reply_text(s.replies[0].get()), sharded ? "ssubscribe" : "subscribe");
}

// The scripts' commands (lua/acl_probe.lua). Its arguments end as every
// script's (lua/common.lua): no history, the database, no server run.
void try_script(DoctorLink& link, AclRun& run, int64_t deadline) {
  const RedisUri& uri = link.client().uri();
  Exchange y = link.script(lua::k_acl_probe, {run.scratch, k_marker},
                           {run.channel, "0", std::to_string(uri.db), ""}, deadline);
  if (!y.ok) return run.failed(y.error);
  const redisReply* r = y.replies[0].get();
  if (is_error(r)) {
    // A refused key: the EVALSHA probes said which.
    std::string text = link.client().scrub(reply_text(r));
    bool key = is_permission_error(text) && text.find("key") != std::string::npos;
    if (!key && !is_permission_error(text)) run.failed("the probe script: " + text);
    if (!key) run.note(text, "eval");
    return;
  }
  for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
    std::string name, text;
    as_string(r->element[i], name);
    as_string(r->element[i + 1], text);
    std::string command = name == "marker (read)"    ? "hmget"
                          : name == "marker (write)" ? "hset"
                                                     : name;
    run.note(text, command, name.rfind("marker", 0) == 0);
  }
}

} // namespace

void check_acl(DoctorLink& link, Diagnosis& found, int64_t deadline) {
  Client& c = link.client();
  const RedisUri& uri = c.uri();
  std::string user = uri.user.empty() ? "default" : uri.user;
  AclRun run;
  run.keys = "~" + uri.prefix + "*";
  run.channels = "&" + uri.prefix + "*";
  run.marker_keys = link.cluster() ? "~simba:server*" : "~simba:server";
  run.scratch = c.hash_key(k_probe_mutex) + ":doctor";
  run.channel = c.hash_key(k_probe_mutex) + ":db" + std::to_string(uri.db) + ":doctor";
  try_direct(link, run, deadline);
  try_subscribe(link, run, deadline);
  try_script(link, run, deadline);

  const Lacks& lacks = run.lacks;
  if (!lacks.grants.empty()) {
    std::string what, grants;
    for (size_t i = 0; i < lacks.what.size(); ++i) {
      what += (i ? ", " : "") + lacks.what[i];
      grants += " " + lacks.grants[i];
    }
    found.push_back(
        fail_finding(k_acl, "user " + user + " may not use " + what,
                     "ACL SETUSER " + user + grants + " (docs/backends/redis.md \"ACL users\")"));
  } else if (!run.trouble.empty()) {
    found.push_back(fail_finding(k_acl, "cannot check user " + user + "'s rights: " + run.trouble,
                                 "make the server answer, then run this again"));
  } else {
    found.push_back(ok_finding(k_acl, "user " + user +
                                          " may run what simba sends and what its scripts call, "
                                          "on keys " +
                                          run.keys.substr(1) + " and " + run.marker_keys.substr(1) +
                                          ", channels " + run.channels.substr(1)));
  }
}

} // namespace simba::backend::redis
