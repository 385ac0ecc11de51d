#pragma once
// Connecting a stream socket by a deadline: to one address, or to a host
// (a name resolved by resolve.hpp, or an address) trying its addresses in
// turn. The socket is non-blocking and close-on-exec, for deadline_io.
#include <cstdint>
#include <string>
#include <sys/socket.h>

namespace simba::backend::net {

// "" and the connected socket in `fd`, or why not (k_timed_out at the
// deadline) and `fd` -1.
std::string dial(const sockaddr* addr, socklen_t len, int64_t deadline, int& fd);

// `host`:`port` resolved, then each address dialled until one answers;
// "" and `fd`, or why not: the resolver's line, or the last address's error.
std::string dial_host(const std::string& host, int port, int64_t deadline, int& fd);

// A Unix socket at `path`.
std::string dial_unix(const std::string& path, int64_t deadline, int& fd);

} // namespace simba::backend::net
