// /etc/hosts (hosts_file.hpp).
#include "backend/net/hosts_file.hpp"

#include "backend/net/address.hpp"

#include <sstream>
#include <strings.h>

namespace simba::backend::net {

std::vector<sockaddr_storage> hosts_lookup(const std::string& text, const std::string& name,
                                           int port) {
  std::string wanted = name;
  if (!wanted.empty() && wanted.back() == '.') wanted.pop_back();
  std::vector<sockaddr_storage> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    std::string address, alias;
    if (!(fields >> address)) continue;
    while (fields >> alias) {
      if (strcasecmp(alias.c_str(), wanted.c_str()) != 0) continue;
      sockaddr_storage a;
      if (parse_address(address, port, a)) out.push_back(a);
      break;
    }
  }
  return out;
}

} // namespace simba::backend::net
