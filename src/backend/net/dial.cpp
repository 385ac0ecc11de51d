// Connecting by a deadline (dial.hpp).
#include "backend/net/dial.hpp"

#include "backend/net/deadline_io.hpp"
#include "backend/net/resolve.hpp"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/un.h>
#include <unistd.h>

namespace simba::backend::net {

std::string dial(const sockaddr* addr, socklen_t len, int64_t deadline, int& fd) {
  fd = ::socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::strerror(errno);
  std::string why;
  if (::connect(fd, addr, len) != 0) {
    if (errno != EINPROGRESS && errno != EAGAIN) {
      why = std::strerror(errno);
    } else if (!wait_for(fd, POLLOUT, deadline)) {
      why = k_timed_out;
    } else {
      int err = 0;
      socklen_t elen = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
      if (err != 0) why = std::strerror(err);
    }
  }
  if (!why.empty()) {
    ::close(fd);
    fd = -1;
  }
  return why;
}

std::string dial_host(const std::string& host, int port, int64_t deadline, int& fd) {
  fd = -1;
  std::vector<sockaddr_storage> addresses;
  if (std::string why = resolve(host, port, deadline, addresses); !why.empty()) return why;
  std::string why;
  for (const sockaddr_storage& a : addresses) {
    why = dial(reinterpret_cast<const sockaddr*>(&a), address_length(a), deadline, fd);
    if (why.empty() || why == k_timed_out) break;
  }
  return why;
}

std::string dial_unix(const std::string& path, int64_t deadline, int& fd) {
  fd = -1;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) return "the socket path " + path + " is too long";
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  return dial(reinterpret_cast<const sockaddr*>(&sa), sizeof sa, deadline, fd);
}

} // namespace simba::backend::net
