#pragma once
// /etc/resolv.conf, the parts simba's resolver uses (resolv.conf(5)):
// nameserver (up to three, in order), search and domain (the last one
// wins), options ndots:, timeout:, attempts:. Anything else is ignored.
#include <string>
#include <sys/socket.h>
#include <vector>

namespace simba::backend::net {

struct ResolvConf {
  std::vector<sockaddr_storage> servers; // port 53; 127.0.0.1 when none is named
  std::vector<std::string> search;       // domains tried after (or before) the name
  int ndots = 1;                         // a name with at least this many dots is tried as is first
  int timeout_s = 5;                     // per try of one server, in seconds
  int attempts = 2;                      // rounds over all the servers
};

ResolvConf parse_resolv_conf(const std::string& text);

// The names to ask for `name`, in order: as is and with each search
// domain, as ndots says; an absolute name ("db.example.") only as is.
std::vector<std::string> candidate_names(const std::string& name, const ResolvConf& conf);

} // namespace simba::backend::net
