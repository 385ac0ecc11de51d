#include "process/watchdog.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "process/clock.hpp"
#include "process/proc_tree.hpp"

namespace simba::process {
namespace {

constexpr int64_t k_disarm = -1;
// The watchdog's end of the channel, after it has closed everything else.
constexpr int k_channel_fd = 3;
// Passes over the supervisor's tree when the deadline fires: a process that
// forks while being killed may leave a child behind for one pass.
constexpr int k_kill_passes = 4;

void close_inherited_fds() {
  if (close_range(0, 2, 0) == 0 && close_range(k_channel_fd + 1, ~0U, 0) == 0) return;
  // Kernels before 5.9 lack close_range.
  long max_fd = sysconf(_SC_OPEN_MAX);
  if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
  for (int fd = 0; fd < max_fd; ++fd)
    if (fd != k_channel_fd) close(fd);
}

void kill_everything(pid_t supervisor, pid_t pgid) {
  if (pgid > 1) kill(-pgid, SIGKILL);
  pid_t self = getpid();
  for (int pass = 0; pass < k_kill_passes; ++pass)
    if (proc_tree::signal_descendants(supervisor, SIGKILL, self) == 0) break;
}

bool arm(int tfd, int64_t deadline_ms) {
  if (deadline_ms < 1) deadline_ms = 1; // an all-zero it_value would disarm
  itimerspec its{};
  its.it_value.tv_sec = time_t(deadline_ms / 1000);
  its.it_value.tv_nsec = long(deadline_ms % 1000) * 1000000L;
  return timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, nullptr) == 0;
}

// The watchdog process. Never returns.
[[noreturn]] void watchdog_main(int channel, pid_t supervisor, pid_t pgid, int64_t deadline_ms) {
  prctl(PR_SET_NAME, "simba-watchdog");
  // Own process group: signals meant for simba's group (and a terminal's
  // Ctrl-C / Ctrl-Z) must not reach the watchdog.
  setpgid(0, 0);
  struct sigaction ign;
  std::memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE})
    sigaction(s, &ign, nullptr);

  // Keep only the channel: holding simba's other fds (a lock file, the
  // backend socket, a caller's stdout pipe) would leak them.
  if (channel != k_channel_fd) {
    dup2(channel, k_channel_fd);
    channel = k_channel_fd;
  }
  close_inherited_fds();

  int tfd = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK);
  bool have_timer = tfd >= 0 && arm(tfd, deadline_ms);

  for (;;) {
    int timeout = -1;
    if (!have_timer) {
      // Fallback without timerfd: re-check the boot clock at least every
      // second so a suspend cannot stretch the deadline by much.
      int64_t left = deadline_ms - boottime_ms();
      if (left <= 0) {
        kill_everything(supervisor, pgid);
        _exit(0);
      }
      timeout = int(left < 1000 ? left : 1000);
    }
    pollfd fds[2] = {{channel, POLLIN, 0}, {tfd, POLLIN, 0}};
    int n = poll(fds, have_timer ? 2 : 1, timeout);
    if (n < 0) {
      if (errno == EINTR) continue;
      // Cannot wait any more: failing safe means killing now.
      kill_everything(supervisor, pgid);
      _exit(1);
    }
    // The channel first: a renewal that arrived with the expiry wins (it
    // proves the lease was still held).
    if (fds[0].revents) {
      for (;;) {
        int64_t msg = 0;
        ssize_t r = recv(channel, &msg, sizeof msg, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (r <= 0) {
          // EOF without a disarm: the supervisor died (kill -9, crash).
          // Its descendants are re-parented away; CMD's group is what we
          // can still name.
          if (pgid > 1) kill(-pgid, SIGKILL);
          _exit(0);
        }
        if (r != sizeof msg) continue;
        if (msg == k_disarm) _exit(0);
        if (msg < k_disarm) { // CMD's process group, once it exists
          pgid = pid_t(-msg - 2);
          continue;
        }
        deadline_ms = msg;
        if (have_timer) have_timer = arm(tfd, deadline_ms);
      }
    }
    if (have_timer && fds[1].revents) {
      uint64_t expirations = 0;
      // EAGAIN here means a re-arm above reset the expiry.
      if (read(tfd, &expirations, sizeof expirations) == ssize_t(sizeof expirations)) {
        kill_everything(supervisor, pgid);
        _exit(0);
      }
    }
  }
}

} // namespace

// Without an explicit stop() (an exception unwinding through the
// supervisor) the watchdog is not disarmed: it sees the channel close and
// kills CMD's group, as when the supervisor dies.
Watchdog::~Watchdog() {
  if (m_fd >= 0) close(m_fd);
}

void Watchdog::start(pid_t pgid, int64_t deadline_ms) {
  stop();
  // A SEQPACKET socket rather than a pipe: send(MSG_NOSIGNAL) never raises
  // SIGPIPE whatever the caller's disposition, and each deadline stays one
  // message. Closing our end is the "supervisor died" signal.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
    throw InternalError(std::string("watchdog: socketpair: ") + std::strerror(errno));
  pid_t supervisor = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(fds[0]);
    close(fds[1]);
    throw InternalError(std::string("watchdog: fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    close(fds[1]);
    watchdog_main(fds[0], supervisor, pgid, deadline_ms);
  }
  close(fds[0]);
  setpgid(pid, pid); // same as the child's own call; whichever runs first
  m_fd = fds[1];
  m_pid = pid;
}

void Watchdog::set_group(pid_t pgid) {
  if (pgid > 1) set_deadline(-int64_t(pgid) - 2); // see watchdog_main
}

void Watchdog::set_deadline(int64_t deadline_ms) {
  if (m_fd < 0) return;
  // Non-blocking: only a stopped watchdog lets the buffer fill, and then it
  // could not kill anyway. EPIPE: it already acted or exited.
  while (send(m_fd, &deadline_ms, sizeof deadline_ms, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EINTR) {
  }
}

void Watchdog::stop() {
  if (m_fd >= 0) {
    set_deadline(k_disarm);
    close(m_fd);
    m_fd = -1;
  }
  // Not waited for: it exits on its own at once, and waiting would put a
  // context switch on every run's exit path. Its zombie keeps the pid from
  // being reused until Child::reap or our own exit collects it.
  m_pid = -1;
}

} // namespace simba::process
