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

} // namespace

void check_acl(DoctorLink& link, Diagnosis& found, int64_t deadline) {
  Client& c = link.client();
  const RedisUri& uri = c.uri();
  std::string user = uri.user.empty() ? "default" : uri.user;
  std::string scratch = c.hash_key(k_probe_mutex) + ":doctor";
  std::string channel = c.hash_key(k_probe_mutex) + ":db" + std::to_string(uri.db) + ":doctor";
  std::string keys = "~" + uri.prefix + "*", channels = "&" + uri.prefix + "*";
  std::string marker_keys = link.cluster() ? "~simba:server*" : "~simba:server";
  Lacks lacks;
  std::string trouble; // a check that could not be made

  std::vector<Probe> probes = direct_probes(c, scratch, link.cluster());
  std::vector<Command> commands;
  for (const Probe& p : probes) commands.push_back(p.command);
  Exchange x = link.ask(0, commands, deadline);
  if (!x.ok) trouble = x.error;
  for (size_t i = 0; x.ok && i < probes.size(); ++i) {
    const redisReply* r = x.replies[i].get();
    if (is_error(r))
      note_refusal(reply_text(r), probes[i].name, probes[i].marker ? marker_keys : keys, channels,
                   lacks);
  }

  // Subscribing ends a connection's use for anything else: one of its own.
  Connection sub;
  std::string err = link.connect_fresh(0, sub, deadline);
  if (err.empty()) {
    const char* subscribe = link.cluster() ? "SSUBSCRIBE" : "SUBSCRIBE";
    Exchange s = sub.exchange({{subscribe, channel}}, deadline);
    if (s.ok && is_error(s.replies[0].get()))
      note_refusal(reply_text(s.replies[0].get()), link.cluster() ? "ssubscribe" : "subscribe",
                   keys, channels, lacks);
    else if (!s.ok && trouble.empty())
      trouble = s.error;
  } else if (trouble.empty()) {
    trouble = err;
  }
  sub.close();

  // The scripts' commands. The probe's arguments end as every script's
  // (lua/common.lua): no history, the database, no server run.
  Exchange y = link.script(lua::k_acl_probe, {scratch, k_marker},
                           {channel, "0", std::to_string(uri.db), ""}, deadline);
  const redisReply* r = y.ok ? y.replies[0].get() : nullptr;
  if (!y.ok) {
    if (trouble.empty()) trouble = y.error;
  } else if (is_error(r)) {
    // A refused key: the EVALSHA probes above said which.
    std::string text = c.scrub(reply_text(r));
    bool key = is_permission_error(text) && text.find("key") != std::string::npos;
    if (!key && !note_refusal(text, "eval", keys, channels, lacks) && trouble.empty())
      trouble = "the probe script: " + text;
  } else if (r->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
      std::string name, text;
      as_string(r->element[i], name);
      as_string(r->element[i + 1], text);
      bool marker = name.rfind("marker", 0) == 0;
      std::string command = name == "marker (read)"    ? "hmget"
                            : name == "marker (write)" ? "hset"
                                                       : name;
      note_refusal(text, command, marker ? marker_keys : keys, channels, lacks);
    }
  }

  if (!lacks.grants.empty()) {
    std::string what, grants;
    for (size_t i = 0; i < lacks.what.size(); ++i) {
      what += (i ? ", " : "") + lacks.what[i];
      grants += " " + lacks.grants[i];
    }
    found.push_back(
        fail_finding(k_acl, "user " + user + " may not use " + what,
                     "ACL SETUSER " + user + grants + " (docs/backends/redis.md \"ACL users\")"));
  } else if (!trouble.empty()) {
    found.push_back(fail_finding(k_acl, "cannot check user " + user + "'s rights: " + trouble,
                                 "make the server answer, then run this again"));
  } else {
    found.push_back(ok_finding(k_acl, "user " + user +
                                          " may run what simba sends and what its "
                                          "scripts call, on keys " +
                                          keys.substr(1) + " and " + marker_keys.substr(1) +
                                          ", channels " + channels.substr(1)));
  }
}

} // namespace simba::backend::redis
