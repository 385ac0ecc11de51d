#pragma once
// A file descriptor with one owner, closed when its owner goes: no error
// path can leak one, and none is closed twice (the idea of ccache's
// util::Fd). Moved, never copied.
#include <unistd.h>

#include <utility>

namespace simba::sys {

class Fd {
public:
  Fd() = default;
  explicit Fd(int fd) : m_fd(fd) {}
  Fd(Fd&& other) noexcept : m_fd(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return m_fd; }
  bool valid() const { return m_fd >= 0; }
  explicit operator bool() const { return valid(); }

  // The descriptor, no longer owned (the caller closes it).
  int release() { return std::exchange(m_fd, -1); }
  // Closes the descriptor owned (if any) and owns `fd` instead.
  void reset(int fd = -1) {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = fd;
  }
  // Closes it now and says whether close() succeeded: for a file just
  // written, the last place an error of the write may show (NFS, quota).
  bool close() {
    int fd = release();
    return fd < 0 || ::close(fd) == 0;
  }

private:
  int m_fd = -1;
};

} // namespace simba::sys
