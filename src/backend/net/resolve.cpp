// Host names to addresses (resolve.hpp).
#include "backend/net/resolve.hpp"

#include "backend/net/dns_client.hpp"
#include "backend/net/dns_message.hpp"
#include "backend/net/hosts_file.hpp"
#include "backend/net/resolv_conf.hpp"
#include "sys/clock.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <netinet/in.h>
#include <sstream>
#include <strings.h>

namespace simba::backend::net {
namespace {

std::string read_file(const char* path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool is_localhost(const std::string& host) {
  return strcasecmp(host.c_str(), "localhost") == 0 || strcasecmp(host.c_str(), "localhost.") == 0;
}

sockaddr_storage from_bytes(const std::string& raw, int port) {
  sockaddr_storage a{};
  if (raw.size() == 4) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    std::memcpy(&v4->sin_addr, raw.data(), 4);
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    std::memcpy(&v6->sin6_addr, raw.data(), 16);
  }
  return a;
}

// "2s", "1.5s": how long the servers were waited for.
std::string seconds(int64_t ms) {
  int64_t tenths = (std::max<int64_t>(ms, 0) + 50) / 100;
  return std::to_string(tenths / 10) + (tenths % 10 ? "." + std::to_string(tenths % 10) : "") + "s";
}

// What the servers said, for the one line when no address came.
struct Outcomes {
  std::vector<std::string> silent; // servers that did not answer in time
  std::string failure;             // "no usable answer from 10.0.0.1 (SERVFAIL)"
  std::string no_name;             // "NXDOMAIN from ..."
  std::string no_data;

  void note(const DnsAnswer& a, const std::string& server) {
    if (a.kind == DnsAnswer::Kind::no_answer) {
      if (std::find(silent.begin(), silent.end(), server) == silent.end()) silent.push_back(server);
    } else if (a.kind == DnsAnswer::Kind::failed) {
      failure = "no usable answer from " + server + " (" + a.why + ")";
    } else if (a.kind == DnsAnswer::Kind::no_such_name) {
      no_name = "no such host (NXDOMAIN from " + server + ")";
    } else if (a.kind == DnsAnswer::Kind::no_data) {
      no_data = "no address (no A or AAAA record from " + server + ")";
    }
  }

  std::string why(int64_t waited_ms, bool out_of_time) const {
    std::string names;
    for (const std::string& s : silent) names += (names.empty() ? "" : ", ") + s;
    if (out_of_time && !silent.empty())
      return "no answer from " + names + " within " + seconds(waited_ms);
    if (!no_data.empty()) return no_data;
    if (!no_name.empty()) return no_name;
    if (!failure.empty()) return failure;
    if (!silent.empty()) return "no answer from " + names + " within " + seconds(waited_ms);
    return "no time left to ask the DNS servers (" + seconds(waited_ms) + ")";
  }
};

// One name asked of each server in turn, `attempts` rounds, until one
// settles it (addresses, or it has none) or the deadline.
bool ask_name(const std::string& name, const ResolvConf& conf, int64_t deadline, Outcomes& o,
              bool& out_of_time, std::vector<std::string>& found) {
  for (int round = 0; round < conf.attempts; ++round) {
    for (const sockaddr_storage& server : conf.servers) {
      int64_t now = sys::boottime_ms();
      if (now >= deadline) {
        out_of_time = true;
        return false;
      }
      DnsAnswer a = ask_server(server, name, std::min(deadline, now + conf.timeout_s * 1000));
      if (a.kind == DnsAnswer::Kind::addresses) {
        found = std::move(a.addresses);
        return true;
      }
      o.note(a, address_text(server));
      if (a.kind == DnsAnswer::Kind::no_such_name || a.kind == DnsAnswer::Kind::no_data)
        return false;
    }
  }
  out_of_time = sys::boottime_ms() >= deadline;
  return false;
}

std::string ask_dns(const std::string& host, int port, int64_t deadline,
                    std::vector<sockaddr_storage>& out) {
  const int64_t start = sys::boottime_ms();
  std::string query;
  if (std::string why = encode_query(0, host, k_dns_a, query); !why.empty())
    return "not a host name (" + why + ")";
  ResolvConf conf = parse_resolv_conf(read_file("/etc/resolv.conf"));
  Outcomes o;
  bool out_of_time = false;
  for (const std::string& name : candidate_names(host, conf)) {
    std::vector<std::string> found;
    if (encode_query(0, name, k_dns_a, query).empty() &&
        ask_name(name, conf, deadline, o, out_of_time, found)) {
      for (const std::string& raw : found) out.push_back(from_bytes(raw, port));
      return "";
    }
    if (out_of_time) break;
  }
  return o.why(sys::boottime_ms() - start, out_of_time);
}

} // namespace

std::string resolve(const std::string& host, int port, int64_t deadline,
                    std::vector<sockaddr_storage>& out) {
  out.clear();
  sockaddr_storage a;
  if (parse_address(host, port, a)) {
    out.push_back(a);
    return "";
  }
  out = hosts_lookup(read_file("/etc/hosts"), host, port);
  if (!out.empty()) return "";
  if (is_localhost(host)) {
    for (const char* loopback : {"127.0.0.1", "::1"})
      if (parse_address(loopback, port, a)) out.push_back(a);
    return "";
  }
  std::string why = ask_dns(host, port, deadline, out);
  return why.empty() ? "" : "could not resolve host " + host + ": " + why;
}

} // namespace simba::backend::net
