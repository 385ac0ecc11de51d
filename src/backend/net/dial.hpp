#pragma once
// A non-blocking connect finished by a deadline (deadline_io.hpp's
// clock): what every network backend's client opens its socket with
// (postgres/connection_startup.cpp, mysql/connection_handshake.cpp).
#include <cstdint>
#include <string>
#include <sys/socket.h>

namespace simba::backend::net {

// Connects a new socket (non-blocking, close-on-exec) of `family` to
// `addr` by `deadline`: the socket, or -1 and why (k_timed_out at the
// deadline).
int dial(const sockaddr* addr, socklen_t len, int family, int64_t deadline, std::string& why);

// The first address of host:port that takes the connection (TCP, no
// delay): the socket, or -1 and why. `host` may be a name or an address.
int dial_tcp(const std::string& host, int port, int64_t deadline, std::string& why);

// A Unix socket at `path`: the socket, or -1 and why.
int dial_unix(const std::string& path, int64_t deadline, std::string& why);

} // namespace simba::backend::net
