// Connecting with a deadline (dial.hpp).
#include "backend/net/dial.hpp"

#include "backend/net/deadline_io.hpp"

#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/un.h>
#include <unistd.h>

namespace simba::backend::net {

int dial(const sockaddr* addr, socklen_t len, int family, int64_t deadline, std::string& why) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    why = std::strerror(errno);
    return -1;
  }
  int r = ::connect(fd, addr, len);
  if (r != 0 && errno != EINPROGRESS && errno != EAGAIN) {
    why = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (r != 0) {
    if (!wait_for(fd, POLLOUT, deadline)) {
      why = k_timed_out;
      ::close(fd);
      return -1;
    }
    int err = 0;
    socklen_t elen = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
    if (err != 0) {
      why = std::strerror(err);
      ::close(fd);
      return -1;
    }
  }
  return fd;
}

int dial_tcp(const std::string& host, int port, int64_t deadline, std::string& why) {
  addrinfo hints{}, *list = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
  if (rc != 0) {
    why = "could not translate host name \"" + host + "\": " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = list; a && fd < 0; a = a->ai_next) {
    fd = dial(a->ai_addr, a->ai_addrlen, a->ai_family, deadline, why);
    if (why == k_timed_out) break;
  }
  ::freeaddrinfo(list);
  if (fd >= 0) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

int dial_unix(const std::string& path, int64_t deadline, std::string& why) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) {
    why = "the socket path " + path + " is too long";
    return -1;
  }
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  return dial(reinterpret_cast<sockaddr*>(&sa), sizeof sa, AF_UNIX, deadline, why);
}

} // namespace simba::backend::net
