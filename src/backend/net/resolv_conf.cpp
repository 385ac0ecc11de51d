// /etc/resolv.conf (resolv_conf.hpp).
#include "backend/net/resolv_conf.hpp"

#include "backend/net/address.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace simba::backend::net {
namespace {

constexpr int k_dns_port = 53;
constexpr size_t k_max_servers = 3; // as glibc's MAXNS
constexpr size_t k_max_search = 6;

// "name:N" as N, clamped into [low, high]; false when `option` is not `name:`.
bool option_value(const std::string& option, const std::string& name, int low, int high, int& out) {
  std::string prefix = name + ":";
  if (option.compare(0, prefix.size(), prefix) != 0) return false;
  int v = std::atoi(option.c_str() + prefix.size());
  out = std::clamp(v, low, high);
  return true;
}

} // namespace

ResolvConf parse_resolv_conf(const std::string& text) {
  ResolvConf c;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line.substr(0, line.find_first_of("#;")));
    std::string key, word;
    if (!(f >> key)) continue;
    if (key == "nameserver" && f >> word) {
      sockaddr_storage a;
      if (c.servers.size() < k_max_servers && parse_address(word, k_dns_port, a))
        c.servers.push_back(a);
    } else if (key == "search" || key == "domain") {
      c.search.clear();
      while (f >> word && c.search.size() < k_max_search)
        if (word != ".") c.search.push_back(word);
      if (key == "domain" && c.search.size() > 1) c.search.resize(1);
    } else if (key == "options") {
      while (f >> word)
        option_value(word, "ndots", 0, 15, c.ndots) ||
            option_value(word, "timeout", 1, 30, c.timeout_s) ||
            option_value(word, "attempts", 1, 5, c.attempts);
    }
  }
  if (c.servers.empty()) {
    sockaddr_storage a;
    parse_address("127.0.0.1", k_dns_port, a);
    c.servers.push_back(a);
  }
  return c;
}

std::vector<std::string> candidate_names(const std::string& name, const ResolvConf& conf) {
  if (!name.empty() && name.back() == '.') return {name.substr(0, name.size() - 1)};
  std::vector<std::string> searched;
  for (const std::string& d : conf.search) {
    std::string domain = !d.empty() && d.back() == '.' ? d.substr(0, d.size() - 1) : d;
    searched.push_back(name + "." + domain);
  }
  auto dots = std::count(name.begin(), name.end(), '.');
  std::vector<std::string> out;
  if (dots >= conf.ndots) out.push_back(name);
  out.insert(out.end(), searched.begin(), searched.end());
  if (dots < conf.ndots) out.push_back(name);
  return out;
}

} // namespace simba::backend::net
