#pragma once
// One DNS server asked, once, for a name's A and AAAA records, both by
// `until` (sys::boottime_ms()): over UDP from a port the kernel picks at
// random, each question with a random id, replies that are not answers to
// our questions ignored (dns_message.hpp), and a truncated answer asked again
// over TCP within the same time.
#include <cstdint>
#include <string>
#include <sys/socket.h>
#include <vector>

namespace simba::backend::net {

struct DnsAnswer {
  enum class Kind {
    addresses,    // found (A and/or AAAA)
    no_such_name, // NXDOMAIN: the name does not exist
    no_data,      // the name exists and has no address
    failed,       // the server could not answer (SERVFAIL, REFUSED, unreachable): `why`
    no_answer     // nothing by `until`
  };
  Kind kind = Kind::no_answer;
  std::vector<std::string> addresses; // 4 (A) or 16 (AAAA) bytes each, A first
  std::string why;
};

DnsAnswer ask_server(const sockaddr_storage& server, const std::string& name, int64_t until);

} // namespace simba::backend::net
