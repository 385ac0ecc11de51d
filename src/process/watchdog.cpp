#include "process/watchdog.hpp"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "core/error.hpp"
#include "process/nolibc/watchdog_main.hpp"
#include "process/nolibc/watchdog_shared.hpp"

// The supervisor's side of the watchdog: starting it, the deadline, spawning
// CMD through it, reading what it relays. The watchdog's own code is in
// nolibc/ (watchdog_main.cpp): it runs without libc, and a test checks that.
//
// The watchdog shares simba's memory (clone with CLONE_VM, no CLONE_THREAD):
// a fork would copy simba's page tables, then every page either side writes,
// and tear its copy down again at exit, on the path of every run. It is
// still a process of its own: a SIGSTOP or SIGKILL of simba does not reach
// it, and it has its own descriptors and signal mask. Sharing memory has one
// rule: the watchdog's code touches nothing of simba's but the Shared block,
// which lives in the watchdog's own mapping (and a spawn request simba waits
// on), and calls no libc function (see nolibc/syscalls.hpp). Where there is
// no system-call stub for the architecture it forks instead.
//
// Known cost of sharing: when the kernel's OOM killer picks simba, it also
// kills every process sharing simba's memory, so the watchdog too; CMD then
// still dies (PDEATHSIG), processes CMD started may not. simba is rarely the
// largest process around.

namespace simba::process {
namespace {

// SIMBA_FORK_WATCHDOG: a build for callgrind (CMakeLists.txt,
// SIMBA_CALLGRIND), which cannot follow a clone(CLONE_VM).
#ifdef SIMBA_FORK_WATCHDOG
constexpr bool k_share_memory = false;
#else
constexpr bool k_share_memory = raw::k_raw_syscalls;
#endif

// The watchdog's mapping (see k_region), its Shared block constructed.
char* map_region() {
  // Shared with a clone by nature; with a fork it must be MAP_SHARED.
  int sharing = k_share_memory ? MAP_PRIVATE : MAP_SHARED;
  void* region = mmap(nullptr, k_region, PROT_READ | PROT_WRITE,
                      sharing | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (region == MAP_FAILED)
    throw InternalError(std::string("watchdog: mmap: ") + std::strerror(errno));
  char* bytes = static_cast<char*>(region);
  if (k_share_memory) mprotect(bytes + k_page, k_page, PROT_NONE); // stack guard
  new (bytes) Watchdog::Shared{};
  return bytes;
}

// The state a (re)started watchdog begins with: disarmed, CMD's group
// known, nothing relayed; the test hooks read here (it has no getenv).
void reset_shared(Watchdog::Shared& shared, pid_t pgid) {
  shared.deadline_ms.store(k_no_deadline);
  shared.pgid.store(pgid);
  shared.walk_by_scan = std::getenv("SIMBA_TEST_PROC_SCAN") != nullptr;
  const char* pause = std::getenv("SIMBA_TEST_WATCHDOG_PAUSE_MS");
  shared.pause_before_setting_ms = pause ? std::atoi(pause) % 1000 : 0;
  shared.spawn_request.store(nullptr);
  shared.cmd_pid.store(0);
  shared.exited_pid.store(0);
  shared.stops.store(0);
}

// Starts the watchdog process on the stack at the end of `region`: a clone
// sharing our memory, or a fork (closing `our_end`, the supervisor's end of
// the channel). Returns its pid, or -1 (errno set).
pid_t launch(char* region, WatchdogArgs* args, int our_end) {
  if (k_share_memory) return clone(watchdog_entry, region + k_region, CLONE_VM | SIGCHLD, args);
  pid_t pid = fork();
  if (pid == 0) {
    close(our_end);
    watchdog_entry(args);
  }
  return pid;
}

} // namespace

// Without an explicit stop() (an exception unwinding through the
// supervisor) the watchdog is not disarmed: it sees the channel close and
// kills CMD's group, as when the supervisor dies. The region is not
// unmapped: the watchdog may still be running on it.
Watchdog::~Watchdog() {
  if (m_left) m_fd.release(); // open until our exit (leave())
}

Watchdog::Shared* Watchdog::shared() const { return reinterpret_cast<Shared*>(m_region); }

void Watchdog::start() {
  if (m_fd) return;
  if (!m_region) m_region = map_region();
  // A restarted watchdog takes over the state (see set_deadline).
  reset_shared(*shared(), m_pgid);
  m_stops_seen = 0;
  // A SEQPACKET socket rather than a pipe: send(MSG_NOSIGNAL) never raises
  // SIGPIPE whatever the caller's disposition. Closing our end is the
  // "supervisor gone" signal; its end closing tells us the watchdog died.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
    throw InternalError(std::string("watchdog: socketpair: ") + std::strerror(errno));
  // The timer both of us set (see Shared). Without one (-1) the watchdog
  // makes its own and is woken to set it.
  m_tfd.reset(timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK));
  auto* args =
      new (m_region + sizeof(Shared)) WatchdogArgs{shared(), fds[0], fds[1], m_tfd.get(), getpid()};
  pid_t pid = launch(m_region, args, fds[1]);
  if (pid < 0) {
    int err = errno;
    close(fds[0]);
    close(fds[1]);
    m_tfd.reset();
    throw InternalError(std::string("watchdog: clone: ") + std::strerror(err));
  }
  // The clone holds its own copy of both ends; it closes all but its own.
  close(fds[0]);
  setpgid(pid, pid); // same as the child's own call; whichever runs first
  m_fd.reset(fds[1]);
  m_pid = pid;
}

// False when the watchdog is gone (killed by someone: its end is closed).
bool Watchdog::alive() const {
  if (!m_fd) return false;
  pollfd p{m_fd.get(), 0, 0};
  while (::poll(&p, 1, 0) < 0 && errno == EINTR) {
  }
  return !(p.revents & (POLLHUP | POLLERR));
}

bool Watchdog::wake() {
  char b = 0;
  for (;;) {
    // Non-blocking: only a stopped watchdog lets the buffer fill, and then
    // it could not kill anyway.
    if (::send(m_fd.get(), &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0) return true;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

// Sets the shared timer, or (without one) wakes the watchdog to set its own.
// False when the watchdog is gone.
bool Watchdog::arm(int64_t deadline_ms) {
  if (m_tfd && set_timer(m_tfd.get(), deadline_ms)) return alive();
  return wake();
}

void Watchdog::set_deadline(int64_t deadline_ms) {
  if (m_fd) {
    int64_t prev = shared()->deadline_ms.exchange(deadline_ms);
    // Later than before: the timer fires no later than the old deadline and
    // the watchdog then finds the new one. Earlier, or newly armed: the
    // timer moves (after the store: see Shared).
    bool ok = (prev != k_no_deadline && deadline_ms >= prev) ? alive() : arm(deadline_ms);
    if (ok) return;
    // Killed by someone. Its end closed when it exited, after it left the
    // region: a new one may run on it. Its zombie is collected by Child::reap.
    m_fd.reset();
  }
  start();
  shared()->deadline_ms.store(deadline_ms);
  arm(deadline_ms);
}

bool Watchdog::can_spawn() { return k_share_memory; }

pid_t Watchdog::spawn(int (*entry)(void*), void* arg, void* stack_top) {
  if (!k_share_memory) throw InternalError("watchdog: spawn needs a watchdog that shares memory");
  start();
  SpawnRequest request{entry, arg, stack_top, -1};
  m_stops_seen = 0; // the watchdog counts the new CMD's stops from 0
  shared()->spawn_request.store(&request);
  char answer = 0;
  ssize_t n = -1;
  if (wake()) {
    do {
      n = ::recv(m_fd.get(), &answer, 1, 0);
    } while (n < 0 && errno == EINTR);
  }
  shared()->spawn_request.store(nullptr);
  // Gone before its answer: whatever it started died with it (PDEATHSIG).
  if (n != 1) throw InternalError("watchdog: gone while starting CMD");
  if (request.pid < 0) throw InternalError("watchdog: clone failed");
  return pid_t(request.pid);
}

bool Watchdog::take_exit(pid_t pid, int& wait_status) const {
  if (!m_region || pid <= 0 || shared()->exited_pid.load() != pid) return false;
  wait_status = shared()->exit_status.load();
  return true;
}

bool Watchdog::take_stop(int& signo) {
  if (!m_region) return false;
  uint32_t stops = shared()->stops.load();
  if (stops == m_stops_seen) return false;
  m_stops_seen = stops;
  signo = shared()->stop_signal.load();
  return true;
}

void Watchdog::set_group(pid_t pgid) {
  m_pgid = pgid;
  if (m_region) shared()->pgid.store(pgid);
}

void Watchdog::disarm() {
  m_pgid = 0;
  if (!m_region) return;
  // No wake-up: a timer that fires finds no deadline.
  shared()->deadline_ms.store(k_no_deadline);
  shared()->pgid.store(0);
}

void Watchdog::leave() {
  disarm();
  m_left = true;
}

void Watchdog::stop() {
  disarm();
  m_tfd.reset();
  if (m_fd) {
    m_fd.reset(); // it sees the channel close with nothing to kill and exits
    // It may still run on the region for a moment: a later start() (tests
    // do that) takes a new one. This one stays mapped: stop() comes once.
    m_region = nullptr;
  }
  // Not waited for: waiting would put a context switch on every run's exit
  // path. Its zombie keeps the pid from being reused until Child::reap or our
  // own exit collects it.
  m_pid = -1;
}

} // namespace simba::process
