// Socket addresses from text and back (address.hpp).
#include "backend/net/address.hpp"

#include <arpa/inet.h>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <net/if.h>
#include <netinet/in.h>

namespace simba::backend::net {
namespace {

// A scope: an interface's name or its number. if_nametoindex() asks the
// kernel (an ioctl), no name service.
bool parse_scope(const std::string& s, uint32_t& id) {
  if (s.empty()) return false;
  char* end = nullptr;
  unsigned long n = std::strtoul(s.c_str(), &end, 10);
  if (*end == '\0' && std::isdigit(static_cast<unsigned char>(s[0]))) {
    id = static_cast<uint32_t>(n);
    return n <= UINT32_MAX;
  }
  id = if_nametoindex(s.c_str());
  return id != 0;
}

} // namespace

bool parse_address(const std::string& text, int port, sockaddr_storage& out) {
  out = sockaddr_storage{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
  if (inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    return true;
  }
  std::string t = text;
  if (t.size() > 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  std::string scope;
  if (size_t pct = t.find('%'); pct != std::string::npos) {
    scope = t.substr(pct + 1);
    t.resize(pct);
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
  if (inet_pton(AF_INET6, t.c_str(), &v6->sin6_addr) != 1) return false;
  if (text.find('%') != std::string::npos && !parse_scope(scope, v6->sin6_scope_id)) return false;
  v6->sin6_family = AF_INET6;
  v6->sin6_port = htons(static_cast<uint16_t>(port));
  return true;
}

socklen_t address_length(const sockaddr_storage& a) {
  return a.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

std::string address_text(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (a.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&a)->sin_addr, buf, sizeof buf);
    return buf;
  }
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
  inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
  std::string s = buf;
  if (v6->sin6_scope_id != 0) s += "%" + std::to_string(v6->sin6_scope_id);
  return s;
}

} // namespace simba::backend::net
