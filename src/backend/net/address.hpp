#pragma once
// Socket addresses from text and back, with no name service: an IPv4
// address, or an IPv6 one with an optional scope ("fe80::1%eth0", "[::1]").
#include <string>
#include <sys/socket.h>

namespace simba::backend::net {

// `text` as an address with `port`; false when it is not one (a host name).
bool parse_address(const std::string& text, int port, sockaddr_storage& out);

// The length connect() wants for `a`.
socklen_t address_length(const sockaddr_storage& a);

// `a` as text, without the port ("10.0.0.1", "fe80::1%2"), for messages.
std::string address_text(const sockaddr_storage& a);

} // namespace simba::backend::net
