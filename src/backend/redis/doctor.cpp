// simba doctor on Redis: the checks in order (doctor.hpp).
#include "backend/redis/doctor.hpp"

#include "backend/redis/doctor_checks.hpp"
#include "sys/clock.hpp"

#include <exception>

namespace simba::backend::redis {

Finding ok_finding(const std::string& check, const std::string& detail) {
  return {check, Finding::Verdict::ok, detail, ""};
}

Finding warn_finding(const std::string& check, const std::string& detail, const std::string& fix) {
  return {check, Finding::Verdict::warn, detail, fix};
}

Finding fail_finding(const std::string& check, const std::string& detail, const std::string& fix) {
  return {check, Finding::Verdict::fail, detail, fix};
}

std::string server_label(const DoctorLink& link, size_t i) {
  return link.servers().size() > 1 ? "at " + link.servers()[i] + ": " : "";
}

void diagnose(Client& client, Diagnosis& found, const DiagnoseOptions& options) {
  // Each check gets the budget of one call: the URI's timeout, or the
  // doctor's when it gives one.
  int64_t budget = options.timeout_ms > 0 ? options.timeout_ms : client.uri().timeout_ms;
  auto deadline = [budget] { return sys::boottime_ms() + budget; };
  try {
    DoctorLink link(client);
    std::string err = link.open(deadline());
    if (!err.empty()) {
      found.push_back(fail_finding("redis", err, "make the server reachable, then run this again"));
      return;
    }
    if (client.uri().tls) check_tls(link, found, deadline());
    check_acl(link, found, deadline());
    for (size_t i = 0; i < link.servers().size(); ++i) check_server(link, i, found, deadline());
    if (!client.uri().sentinel.nodes.empty()) check_sentinels(client.uri(), found, deadline());
    if (link.cluster()) check_cluster(link, found, deadline());
    for (size_t i = 0; i < link.servers().size(); ++i) check_marker(link, i, found, deadline());
  } catch (const std::exception& e) {
    // The Client's own calls (a cluster's) throw what ends simba there.
    found.push_back(fail_finding("redis", e.what(), "fix what it says, then run this again"));
  }
}

} // namespace simba::backend::redis
