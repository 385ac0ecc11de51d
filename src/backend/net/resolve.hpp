#pragma once
// Host names to addresses, simba's own resolver (no getaddrinfo).
//
// simba is a static binary: glibc's getaddrinfo() would load the host's NSS
// modules (nsswitch.conf: mdns, resolve, sss...), shared objects built for
// the system's libc, into it, one distribution upgrade away from a crash;
// and it is not bounded by the call's deadline. So a host is, in order: an
// address (IPv4, IPv6 with an optional scope) taken as is; a name of
// /etc/hosts; "localhost" (the loopback addresses, when /etc/hosts lacks
// it); else asked of the DNS servers of /etc/resolv.conf (resolv_conf.hpp,
// dns_client.hpp), every wait capped by the deadline. NSS modules are not
// consulted (docs/backends/README.md says so to users).
#include "backend/net/address.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace simba::backend::net {

// `host`'s addresses with `port` by `deadline` (sys::boottime_ms()), IPv4
// and IPv6 alike; "" or one line: "could not resolve host db.example: no
// answer from 127.0.0.53 within 2s".
std::string resolve(const std::string& host, int port, int64_t deadline,
                    std::vector<sockaddr_storage>& out);

} // namespace simba::backend::net
