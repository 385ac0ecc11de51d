// simba doctor on etcd (doctor.hpp): each member's /v3/maintenance/status,
// and one read and one write check of simba's prefix through the backend's client.
#include "backend/etcd/doctor.hpp"

#include "backend/etcd/keys.hpp"
#include "sys/clock.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace simba::backend::etcd {
namespace {

using Verdict = Finding::Verdict;

Finding finding(const char* check, Verdict v, std::string detail, std::string fix = "") {
  return Finding{check, v, std::move(detail), std::move(fix)};
}

struct MemberStatus {
  std::string where;
  std::string error; // "" when it answered
  std::string version;
  int64_t id = 0;
  int64_t leader = 0;
};

MemberStatus status_of(const EtcdUri& uri, size_t i, const std::string& token, int64_t deadline) {
  const EtcdUri::Node& n = uri.endpoints[i];
  HttpTarget t{n.host, n.port, uri.tls, {}};
  t.tls_options.host = n.host;
  t.tls_options.ca_file = uri.tls_ca;
  t.tls_options.cert_file = uri.tls_cert;
  t.tls_options.key_file = uri.tls_key;
  MemberStatus s;
  s.where = n.host + ":" + std::to_string(n.port);
  HttpConnection conn(t);
  HttpAnswer a = conn.post("/v3/maintenance/status", "{}", token, deadline);
  nlohmann::json j = parse_json(a.body);
  if (a.status != 200 || !j.is_object()) {
    s.error = a.status ? "HTTP status " + std::to_string(a.status) : a.error;
    return s;
  }
  s.version = text(j, "version", "?");
  s.leader = number(j, "leader");
  if (j.contains("header")) s.id = number(j["header"], "member_id");
  return s;
}

// Before 3.4.31 and 3.5.13 a leader stalled in its raft loop (a slow disk,
// a starved CPU) could revoke a lease its owner was renewing on the new
// leader (etcd-io/etcd#15247): the key gone under a running CMD
// (README.md, "etcd's bugs that matter here").
bool revokes_live_leases(const std::string& version) {
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(version.c_str(), "%d.%d.%d", &major, &minor, &patch) != 3 || major != 3)
    return false;
  return minor < 4 || (minor == 4 && patch < 31) || (minor == 5 && patch < 13);
}

// etcd checkpoints only the leases longer than its checkpoint interval (5
// minutes); with --experimental-enable-lease-checkpoint a new leader may
// end a checkpointed lease before simba stops CMD (README.md, "Lease
// checkpoints"). simba's lease: ttl + transition + 1 s, whole seconds.
void check_checkpoints(const DiagnoseOptions& o, Diagnosis& found) {
  int64_t lease_s = (std::max<int64_t>(o.ttl_ms + o.transition_ms, 1) + 999) / 1000 + 1;
  std::string leases = "leases of " + std::to_string(lease_s) + " s";
  if (lease_s <= 300)
    found.push_back(finding("lease-checkpoints", Verdict::ok,
                            leases + ": never checkpointed, whatever the members' "
                                     "--experimental-enable-lease-checkpoint"));
  else
    found.push_back(finding("lease-checkpoints", Verdict::warn,
                            leases + ": with --experimental-enable-lease-checkpoint a new "
                                     "leader may end one before simba stops CMD",
                            "keep ttl + transition at most 299s, or run etcd without lease "
                            "checkpoints"));
}

void check_members(const std::vector<MemberStatus>& all, Diagnosis& found) {
  std::set<std::string> versions;
  std::set<int64_t> leaders;
  for (const MemberStatus& s : all) {
    if (!s.error.empty()) {
      found.push_back(finding("members", Verdict::warn, s.where + " does not answer: " + s.error,
                              "start the member, or take it out of the URI"));
      continue;
    }
    found.push_back(finding("members", Verdict::ok, s.where + ": etcd " + s.version));
    versions.insert(s.version);
    if (s.leader) leaders.insert(s.leader);
  }
  if (leaders.size() == 1)
    found.push_back(finding("leader", Verdict::ok, "the members agree on a leader"));
  else if (leaders.empty())
    found.push_back(finding("leader", Verdict::fail, "no member knows a leader (no quorum?)",
                            "bring a majority of the members back"));
  else
    found.push_back(finding("leader", Verdict::warn, "the members name different leaders",
                            "wait for the election to settle; check the members' network"));
  if (versions.size() > 1)
    found.push_back(finding("versions", Verdict::warn, "the members run different etcd versions",
                            "finish the upgrade"));
  for (const std::string& v : versions)
    if (revokes_live_leases(v))
      found.push_back(finding("stale-leader-revoke", Verdict::warn,
                              "etcd " + v + ": a stalled old leader can revoke a lease its "
                                            "owner renews (etcd-io/etcd#15247): two CMDs at once",
                              "upgrade to etcd 3.4.31+ or 3.5.13+"));
}

} // namespace

void diagnose(const EtcdUri& uri, Client& client, Diagnosis& found,
              const DiagnoseOptions& options) {
  int64_t budget = std::max<int64_t>(options.timeout_ms, 1000);
  std::string token = client.token(sys::boottime_ms() + budget);
  std::vector<MemberStatus> all;
  for (size_t i = 0; i < uri.endpoints.size(); ++i)
    all.push_back(status_of(uri, i, token, sys::boottime_ms() + budget));
  check_members(all, found);
  check_checkpoints(options, found);
  // etcd:// with a user: the login's password, then its token with every
  // call, in clear to whoever sees the network.
  if (!uri.tls && !uri.user.empty())
    found.push_back(finding("tls", Verdict::warn,
                            "user " + uri.user + "'s password and token go unencrypted (etcd://)",
                            "etcds:// (and cacert=) on a network"));
  nlohmann::json r = range_all(uri.prefix, "");
  r["limit"] = "1";
  r["keys_only"] = true;
  Call c = client.call("/v3/kv/range", r, false, sys::boottime_ms() + budget);
  // The right to write, without a write: etcd checks every operation of a
  // transaction, the branch not taken too, and this one's comparison (a
  // key's version below 0) never holds.
  const std::string probe = base64(uri.prefix + "!doctor");
  nlohmann::json txn = {
      {"compare", {{{"target", "VERSION"}, {"result", "LESS"}, {"key", probe}, {"version", "0"}}}},
      {"success", {{{"request_put", {{"key", probe}, {"value", base64("")}}}}}}};
  if (c.ok()) c = client.call("/v3/kv/txn", txn, false, sys::boottime_ms() + budget);
  const std::string fix = "give a role of the user readwrite on " + uri.prefix +
                          " (docs/backends/etcd.md)";
  if (c.ok())
    found.push_back(finding("rights", Verdict::ok, "simba's prefix " + uri.prefix +
                                                       " can be read and written" +
                                                       (uri.user.empty() ? "" : " by " + uri.user)));
  else
    found.push_back(finding("rights", Verdict::fail,
                            "cannot read and write " + uri.prefix + ": " + c.error, fix));
  found.push_back(finding("lease-clock", Verdict::ok,
                          "clock offsets are irrelevant: etcd times leases on its leader's "
                          "monotonic clock, simba on this host's"));
}

} // namespace simba::backend::etcd
