// Socket I/O against a deadline (deadline_io.hpp).
#include "backend/net/deadline_io.hpp"

#include "sys/clock.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

namespace simba::backend::net {

const std::string k_timed_out = "timed out";

timeval to_timeval(int64_t ms) {
  ms = std::max<int64_t>(ms, 1);
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
  return tv;
}

void set_cloexec(int fd) { fcntl(fd, F_SETFD, FD_CLOEXEC); }

bool wait_for(int fd, short events, int64_t deadline) {
  for (;;) {
    int64_t left = deadline - sys::boottime_ms();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (n > 0) return true; // ready, or an error that the next I/O reports
    if (n < 0 && errno != EINTR) return false;
  }
}

bool readable_now(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) != 0;
}

std::string send_all(int fd, const std::string& out, int64_t deadline, size_t& sent) {
  while (sent < out.size()) {
    ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (wait_for(fd, POLLOUT, deadline)) continue;
      return k_timed_out;
    }
    return n < 0 ? std::strerror(errno) : "cannot send";
  }
  return "";
}

std::string receive_some(int fd, char* buf, size_t size, size_t& got) {
  got = 0;
  for (;;) {
    ssize_t n = ::recv(fd, buf, size, MSG_DONTWAIT);
    if (n > 0) {
      got = static_cast<size_t>(n);
      return "";
    }
    if (n == 0) return "the server closed the connection";
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return "";
    return std::strerror(errno);
  }
}

} // namespace simba::backend::net
