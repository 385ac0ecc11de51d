#include "process/watchdog.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>

#include "core/error.hpp"

// The watchdog shares simba's memory (clone with CLONE_VM, no CLONE_THREAD):
// a fork would copy simba's page tables, then every page either side writes
// (a quarter of a millisecond per run on a VM), and a fork's copy of the
// memory must be torn down again at exit. It is still a process of its own:
// a SIGSTOP or SIGKILL of simba does not reach it, and it has its own
// descriptors and signal mask. Sharing memory has one rule: the watchdog's
// code touches nothing of simba's but the Shared block below, which lives in
// the watchdog's own mapping, and calls no libc function — libc's errno and
// locks belong to simba's thread. It makes its system calls itself. Where
// this file has no system-call stub for the architecture it forks instead.
// The one libc function it calls is clone() (spawn): an assembly wrapper
// around the system call that takes no lock and writes errno only when the
// call fails, while simba waits for the answer (a return to a new stack
// cannot be written in C).
//
// Known cost of sharing: when the kernel's OOM killer picks simba, it also
// kills every process sharing simba's memory, so the watchdog too; CMD then
// still dies (PDEATHSIG), processes CMD started may not. simba is rarely the
// largest process around.

namespace simba::process {

// What the supervisor and the watchdog share: the deadline and CMD's group,
// and the timer (a timerfd the supervisor creates and the watchdog keeps).
// Arming, or moving the deadline earlier, is a store and a
// timerfd_settime() by the supervisor: the watchdog is not woken, so a
// hand-over's path from "acquired" to "CMD runs" has no context switch to
// it. A renewal, which moves the deadline later, is a store: the watchdog
// re-reads the deadline when its timer fires and sleeps on if it has
// moved. Both sides set the timer; the watchdog re-reads the deadline after
// each setting of its own, so whichever comes last, the timer ends up at
// the deadline (see check()). Without a timerfd the supervisor wakes the
// watchdog with a byte on the channel instead.
struct Watchdog::Shared {
  std::atomic<int64_t> deadline_ms; // k_no_deadline: disarmed
  std::atomic<int32_t> pgid;        // CMD's group; 0 while unknown
  // Test hook (SIMBA_TEST_PROC_SCAN, read by the supervisor: the watchdog
  // has no getenv): walk by a scan of /proc, as on a kernel without
  // /proc/PID/task/TID/children, which tests cannot otherwise reach.
  bool walk_by_scan;
  // Test hook (SIMBA_TEST_WATCHDOG_PAUSE_MS): a pause between reading the
  // deadline and setting the timer, the window in which the supervisor may
  // set the timer too (see check()).
  int32_t pause_before_setting_ms;

  // spawn(): the request the supervisor leaves before it wakes us; it
  // waits for our answer on the channel, so the request stays valid.
  std::atomic<SpawnRequest*> spawn_request;
  // CMD's exits and stops, relayed (we are its parent): the last CMD
  // spawned; the one that exited and its wait status (the status is stored
  // first); how often CMD stopped, and by which signal the last time.
  std::atomic<int32_t> cmd_pid;
  std::atomic<int32_t> exited_pid;
  std::atomic<int32_t> exit_status;
  std::atomic<uint32_t> stops;
  std::atomic<int32_t> stop_signal;
};

struct Watchdog::SpawnRequest {
  int (*entry)(void*);
  void* arg;
  void* stack_top;
  long pid; // the answer: the new process, or -1
};

namespace {

constexpr int64_t k_no_deadline = -1;
static_assert(std::atomic<int64_t>::is_always_lock_free, "the shared block needs lock-free atomics");
static_assert(std::atomic<int32_t>::is_always_lock_free, "the shared block needs lock-free atomics");

// The watchdog's mapping: the Shared block and the start arguments in the
// first page, a guard page, then its stack (it needs about 60 KiB for the
// buffers of a kill pass).
constexpr size_t k_page = 4096;
constexpr size_t k_region = 256 * 1024;

// Passes over the supervisor's tree when the deadline fires: a process that
// forks while being killed may leave a child behind for one pass.
constexpr int k_kill_passes = 4;

// ---- System calls without libc ---------------------------------------------

#if defined(__x86_64__)
constexpr bool k_share_memory = true;
long raw_syscall(long n, long a, long b, long c, long d, long e, long f) {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
constexpr bool k_share_memory = true;
long raw_syscall(long n, long a, long b, long c, long d, long e, long f) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory");
  return x0;
}
#else
constexpr bool k_share_memory = false; // forked: errno is the child's own
long raw_syscall(long n, long a, long b, long c, long d, long e, long f) {
  long r = ::syscall(n, a, b, c, d, e, f);
  return r == -1 ? -errno : r;
}
#endif

template <typename T> long as_arg(T v) {
  if constexpr (std::is_null_pointer_v<T>)
    return 0;
  else if constexpr (std::is_pointer_v<T>)
    return reinterpret_cast<long>(v);
  else
    return static_cast<long>(v);
}

// sys(SYS_x, args...): the result, or -errno.
template <typename... A> long sys(long n, A... args) {
  static_assert(sizeof...(A) <= 6, "at most six arguments");
  long a[6] = {as_arg(args)...};
  return raw_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

[[noreturn]] void wd_exit() {
  for (;;) sys(SYS_exit, 0);
}

int64_t wd_now_ms() {
  timespec ts{};
  sys(SYS_clock_gettime, CLOCK_BOOTTIME, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void wd_kill(long pid, int signo) { sys(SYS_kill, pid, signo); }

// ---- /proc without libc ----------------------------------------------------

// Appends "/proc/A[/task[/B[/children]]]"-style paths: text and numbers.
struct Path {
  char buf[96];
  size_t len = 0;
  Path& add(const char* s) {
    while (*s && len + 1 < sizeof buf) buf[len++] = *s++;
    buf[len] = 0;
    return *this;
  }
  Path& add(long v) {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = char('0' + v % 10);
      v /= 10;
    } while (v > 0 && n < 23);
    while (n > 0 && len + 1 < sizeof buf) buf[len++] = digits[--n];
    buf[len] = 0;
    return *this;
  }
};

long wd_open(const Path& p, int flags) { return sys(SYS_openat, AT_FDCWD, p.buf, flags | O_RDONLY | O_CLOEXEC); }

// Reads a file whole into buf (up to cap - 1 bytes, NUL-terminated). Returns
// the length, or -1 when it cannot be opened (`open_error` then holds -errno).
long wd_read_file(const Path& p, char* buf, size_t cap, long* open_error = nullptr) {
  long fd = wd_open(p, 0);
  if (fd < 0) {
    if (open_error) *open_error = fd;
    return -1;
  }
  size_t len = 0;
  while (len + 1 < cap) {
    long n = sys(SYS_read, fd, buf + len, cap - 1 - len);
    if (n == -EINTR) continue;
    if (n <= 0) break;
    len += size_t(n);
  }
  sys(SYS_close, fd);
  buf[len] = 0;
  return long(len);
}

bool parse_pid(const char* s, long& out) {
  if (*s < '1' || *s > '9') return false;
  long v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9' || v > 0x7fffffff / 10) return false;
    v = v * 10 + (*s - '0');
  }
  out = v;
  return true;
}

struct Stat {
  char state = '?';
  long ppid = 0;
  long pgrp = 0;
};

// "pid (comm) S ppid pgrp ...": comm may hold anything, so the fields start
// after the last ')'.
bool wd_read_stat(long pid, Stat& st) {
  char text[512];
  long len = wd_read_file(Path().add("/proc/").add(pid).add("/stat"), text, sizeof text);
  if (len <= 0) return false;
  const char* p = nullptr;
  for (long i = 0; i < len; ++i)
    if (text[i] == ')') p = text + i;
  if (!p) return false;
  ++p;
  while (*p == ' ') ++p;
  if (!*p) return false;
  st.state = *p++;
  long fields[2] = {0, 0};
  for (long& f : fields) {
    while (*p == ' ') ++p;
    bool negative = *p == '-';
    if (negative) ++p;
    if (*p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') f = f * 10 + (*p++ - '0');
    if (negative) f = -f;
  }
  st.ppid = fields[0];
  st.pgrp = fields[1];
  return true;
}

struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

// Calls f(pid) for every numeric entry of a /proc directory.
template <typename F> void wd_each_pid(const Path& dir, char* dents, size_t cap, F f) {
  long fd = wd_open(dir, O_DIRECTORY);
  if (fd < 0) return;
  for (;;) {
    long n = sys(SYS_getdents64, fd, dents, cap);
    if (n == -EINTR) continue;
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<Dirent64*>(dents + off);
      long pid = 0;
      if (parse_pid(d->name, pid)) f(pid);
      off += d->reclen;
    }
  }
  sys(SYS_close, fd);
}

// Everything a kill pass needs, on the watchdog's stack.
struct Walk {
  static constexpr int k_max = 4096;
  long queue[k_max];
  int count = 0;
  char dents[4096];
  char text[16384];
  int children_files = -1; // -1 unknown, 0 missing, 1 present (CONFIG_PROC_CHILDREN)

  bool known(long pid) const {
    for (int i = 0; i < count; ++i)
      if (queue[i] == pid) return true;
    return false;
  }
};

// Calls f(child) for each child of `pid`: from /proc/PID/task/*/children,
// else from a scan of every process's parent.
template <typename F> void wd_each_child(Walk& w, long pid, F f) {
  if (w.children_files != 0) {
    bool missing = false;
    char dents[1024]; // the tasks of one process; the big buffer is the scan's
    wd_each_pid(Path().add("/proc/").add(pid).add("/task"), dents, sizeof dents, [&](long tid) {
      if (missing) return;
      long err = 0;
      Path path = Path().add("/proc/").add(pid).add("/task/").add(tid).add("/children");
      long len = wd_read_file(path, w.text, sizeof w.text, &err);
      if (len < 0) {
        // Either the kernel lacks the files or the thread just exited.
        if (err == -ENOENT) {
          long fd = wd_open(Path().add("/proc/").add(pid).add("/task/").add(tid), O_DIRECTORY);
          if (fd >= 0) {
            sys(SYS_close, fd);
            missing = true;
          }
        }
        return;
      }
      w.children_files = 1;
      // A full buffer may end inside a number: drop it (a later pass finds it).
      if (size_t(len) + 1 >= sizeof w.text)
        while (len > 0 && w.text[len - 1] != ' ') w.text[--len] = 0;
      long v = 0;
      bool digits = false;
      for (long i = 0; i <= len; ++i) {
        char c = w.text[i];
        if (c >= '0' && c <= '9') {
          v = v * 10 + (c - '0');
          digits = true;
        } else {
          if (digits && v > 0) f(v);
          v = 0;
          digits = false;
        }
      }
    });
    if (!missing) return;
    w.children_files = 0;
  }
  wd_each_pid(Path().add("/proc"), w.dents, sizeof w.dents, [&](long other) {
    Stat st;
    if (wd_read_stat(other, st) && st.ppid == pid) f(other);
  });
}

// Whether the kill still stands: false once the supervisor has disarmed the
// watchdog or armed it anew (the deadline it fired on is gone). CMD and what
// it left are dead then, and a next CMD may already run: it must be spared.
struct Mandate {
  const std::atomic<int64_t>* deadline = nullptr; // null: unconditional
  int64_t fired_on = 0;
  bool holds() const { return !deadline || deadline->load() == fired_on; }
};

// SIGKILLs every descendant of `root` (but the watchdog itself: below it
// are CMD and what CMD started) and every process group one of them leads.
// Returns how many were alive.
int wd_kill_pass(Walk& w, long root, long self, const Mandate& mandate) {
  w.count = 0;
  w.queue[w.count++] = root;
  int alive = 0;
  for (int i = 0; i < w.count; ++i) {
    wd_each_child(w, w.queue[i], [&](long kid) {
      if (w.known(kid) || !mandate.holds()) return;
      if (kid == self) {
        if (w.count < Walk::k_max) w.queue[w.count++] = kid;
        return;
      }
      Stat st;
      if (!wd_read_stat(kid, st)) return; // gone meanwhile
      if (st.pgrp == kid && kid > 1) wd_kill(-kid, SIGKILL);
      wd_kill(kid, SIGKILL);
      if (st.state != 'Z' && st.state != 'X') ++alive;
      if (w.count < Walk::k_max) w.queue[w.count++] = kid;
    });
  }
  return alive;
}

// Kills CMD's group and every descendant of `root`: the supervisor (whose
// tree holds ours) while it lives, ourselves once it died.
void kill_everything(long root, long pgid, bool by_scan, const Mandate& mandate = {}) {
  if (pgid > 1) wd_kill(-pgid, SIGKILL);
  long self = sys(SYS_getpid);
  Walk w;
  if (by_scan) w.children_files = 0;
  for (int pass = 0; pass < k_kill_passes && mandate.holds(); ++pass)
    if (wd_kill_pass(w, root, self, mandate) == 0) break;
}

// k_no_deadline disarms the timer.
bool set_timer(long tfd, int64_t deadline_ms) {
  itimerspec its{};
  if (deadline_ms != k_no_deadline) {
    if (deadline_ms < 1) deadline_ms = 1; // an all-zero it_value would disarm
    its.it_value.tv_sec = time_t(deadline_ms / 1000);
    its.it_value.tv_nsec = long(deadline_ms % 1000) * 1000000L;
  }
  return sys(SYS_timerfd_settime, tfd, TFD_TIMER_ABSTIME, &its, nullptr) == 0;
}

struct Args {
  Watchdog::Shared* shared;
  int channel;
  int timer; // the shared timerfd, or -1: the watchdog makes its own
  pid_t supervisor;
};



bool parse_fd(const char* s, long& out) {
  if (*s == '0' && s[1] == 0) {
    out = 0;
    return true;
  }
  return parse_pid(s, out);
}

// Closes every close-on-exec descriptor but `a` and `b`. What stays is what
// simba inherited (its stdin, stdout, stderr, any other the caller passed)
// and is CMD's to inherit in turn (spawn). The others are simba's own (a
// database, a socket): holding them would keep them open past simba.
void close_private_fds(long a, long b) {
  long dir = wd_open(Path().add("/proc/self/fd"), O_DIRECTORY);
  if (dir < 0) return;
  char dents[1024];
  for (;;) {
    long n = sys(SYS_getdents64, dir, dents, sizeof dents);
    if (n == -EINTR) continue;
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<Dirent64*>(dents + off);
      off += d->reclen;
      long fd = -1;
      if (!parse_fd(d->name, fd) || fd == dir || fd == a || fd == b) continue;
      long flags = sys(SYS_fcntl, fd, F_GETFD);
      if (flags >= 0 && (flags & FD_CLOEXEC)) sys(SYS_close, fd);
    }
  }
  sys(SYS_close, dir);
}

// A SIGCHLD descriptor: we are CMD's parent and the subreaper of all below.
long make_child_signal_fd() {
  uint64_t mask = uint64_t(1) << (SIGCHLD - 1); // the kernel's sigset
  return sys(SYS_signalfd4, -1, &mask, sizeof mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

// Runs the supervisor's spawn() request, if any, and answers it.
void serve_spawn(Watchdog::Shared& shared, long channel) {
  Watchdog::SpawnRequest* req = shared.spawn_request.exchange(nullptr);
  if (!req) return;
  // A new CMD: what is relayed from now on is its own.
  shared.stops.store(0);
  shared.exited_pid.store(0);
  long pid = ::clone(req->entry, req->stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD, req->arg);
  if (pid > 0) shared.cmd_pid.store(int32_t(pid));
  req->pid = pid > 0 ? pid : -1;
  char done = 1;
  sys(SYS_sendto, channel, &done, 1, MSG_DONTWAIT | MSG_NOSIGNAL, nullptr, 0);
}

// Reaps every child that exited (CMD, or an orphan of CMD's tree that came
// to us) and relays CMD's exit and stops to the supervisor. The end of an
// orphan is told too: the supervisor waits for all of CMD's tree to be gone
// before it releases, and nothing else would wake it.
void reap_children(Watchdog::Shared& shared, long supervisor) {
  bool orphan_gone = false;
  for (;;) {
    siginfo_t info{};
    long r = sys(SYS_waitid, P_ALL, 0, &info, WEXITED | WSTOPPED | WNOHANG, nullptr);
    if (r == -EINTR) continue;
    if (r < 0 || info.si_pid == 0) break;
    if (info.si_pid != shared.cmd_pid.load()) {
      orphan_gone = orphan_gone || info.si_code != CLD_STOPPED;
      continue;
    }
    int status = info.si_status & 0x7f;
    switch (info.si_code) {
    case CLD_STOPPED:
      shared.stop_signal.store(info.si_status);
      shared.stops.fetch_add(1);
      break;
    case CLD_EXITED: status = (info.si_status & 0xff) << 8; [[fallthrough]];
    case CLD_KILLED:
    case CLD_DUMPED:
      if (info.si_code == CLD_DUMPED) status |= 0x80;
      shared.exit_status.store(status);
      shared.exited_pid.store(info.si_pid);
      break;
    default: continue;
    }
    wd_kill(supervisor, SIGCHLD); // as if CMD were its child
  }
  if (orphan_gone) wd_kill(supervisor, SIGCHLD);
}

// The supervisor died (kill -9, a crash): kill CMD's group and everything
// below us, then go. Its pid may already name someone else: our own
// subtree is what we walk.
[[noreturn]] void outlive_supervisor(Watchdog::Shared& shared) {
  long pgid = shared.pgid.load();
  if (pgid > 1) wd_kill(-pgid, SIGKILL);
  siginfo_t info{};
  // No child at all (the common end of a run): nothing to walk.
  if (sys(SYS_waitid, P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT, nullptr) != -ECHILD)
    kill_everything(sys(SYS_getpid), pgid, shared.walk_by_scan);
  wd_exit();
}

// The watchdog process. Never returns. No libc from here on (see the top).
[[noreturn]] void watchdog_main(Args args) {
  Watchdog::Shared& shared = *args.shared;
  long supervisor = args.supervisor;
  sys(SYS_prctl, PR_SET_NAME, "simba-watchdog");
  // Orphans of CMD's tree come to us, not to simba: they must not go to
  // init with simba when it dies.
  sys(SYS_prctl, PR_SET_CHILD_SUBREAPER, 1);
  // SIGCHLD at its default: ignored (inherited so from simba's caller), the
  // kernel would reap our children itself and CMD's exit would be lost.
  struct {
    unsigned long handler, flags, restorer, mask;
  } default_action{};
  sys(SYS_rt_sigaction, SIGCHLD, &default_action, nullptr, sizeof default_action.mask);
  // Own process group: signals meant for simba's group (and a terminal's
  // Ctrl-C / Ctrl-Z) must not reach the watchdog; nor may any other signal
  // but SIGKILL and SIGSTOP, which nobody can block.
  sys(SYS_setpgid, 0, 0);
  unsigned long all = ~0UL;
  sys(SYS_rt_sigprocmask, SIG_SETMASK, &all, nullptr, sizeof all);

  long channel = args.channel;
  long tfd = args.timer;
  close_private_fds(channel, tfd);
  long children = make_child_signal_fd();

  // Our own timer when the supervisor could not make one: it then wakes us
  // to arm it.
  if (tfd < 0) tfd = sys(SYS_timerfd_create, CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK);
  bool have_timer = tfd >= 0;
  int64_t timer_at = k_no_deadline; // when the timer (or the poll fallback) fires

  // Kills when the shared deadline has passed; otherwise sets the timer to
  // it. After a kill the deadline is cleared unless the supervisor stored a
  // new one meanwhile (then it is looked at in turn): either way the
  // supervisor's next deadline finds the watchdog disarmed, or is seen here.
  // The supervisor sets the timer too (after storing a deadline): a setting
  // of ours from a deadline read before its store could undo its setting,
  // so the deadline is read again after ours and looked at anew if it moved.
  auto check = [&] {
    for (;;) {
      int64_t d = shared.deadline_ms.load();
      if (d != k_no_deadline && wd_now_ms() >= d) {
        kill_everything(supervisor, shared.pgid.load(), shared.walk_by_scan,
                        Mandate{&shared.deadline_ms, d});
        if (!shared.deadline_ms.compare_exchange_strong(d, k_no_deadline)) continue;
        d = k_no_deadline;
      }
      timer_at = d;
      if (shared.pause_before_setting_ms > 0) {
        timespec pause{0, long(shared.pause_before_setting_ms) * 1000000L};
        sys(SYS_nanosleep, &pause, nullptr);
      }
      if (have_timer) have_timer = set_timer(tfd, d);
      if (shared.deadline_ms.load() != d) continue;
      return;
    }
  };

  for (;;) {
    timespec timeout{};
    timespec* ptimeout = nullptr;
    if (!have_timer && timer_at != k_no_deadline) {
      // Fallback without timerfd: re-check the boot clock at least every
      // second so a suspend cannot stretch the deadline by much.
      int64_t left = timer_at - wd_now_ms();
      if (left <= 0) {
        check();
        continue;
      }
      if (left > 1000) left = 1000;
      timeout.tv_sec = time_t(left / 1000);
      timeout.tv_nsec = long(left % 1000) * 1000000L;
      ptimeout = &timeout;
    }
    pollfd fds[3] = {{int(channel), POLLIN, 0}, {int(children), POLLIN, 0}, {int(tfd), POLLIN, 0}};
    long n = sys(SYS_ppoll, fds, have_timer ? 3 : 2, ptimeout, nullptr, 0);
    if (n < 0) {
      if (n == -EINTR) continue;
      // Cannot wait: failing safe means killing now, and again until
      // waiting works (a CMD started meanwhile is killed as well).
      kill_everything(supervisor, shared.pgid.load(), shared.walk_by_scan);
      timespec pause{0, 10 * 1000000L};
      sys(SYS_nanosleep, &pause, nullptr);
      continue;
    }
    if (fds[0].revents) {
      for (;;) {
        char wake[16];
        long r = sys(SYS_recvfrom, channel, wake, sizeof wake, MSG_DONTWAIT, nullptr, nullptr);
        if (r > 0 || r == -EINTR) continue;
        if (r == -EAGAIN || r == -EWOULDBLOCK) break;
        // The channel closed: the supervisor exited or died.
        outlive_supervisor(shared);
      }
    }
    if (fds[1].revents) {
      signalfd_siginfo drained[4];
      while (sys(SYS_read, children, drained, sizeof drained) > 0) {
      }
      reap_children(shared, supervisor);
    }
    // Both a wake-up and the timer mean: look at the deadline.
    if (have_timer && fds[2].revents) {
      uint64_t expirations = 0;
      sys(SYS_read, tfd, &expirations, sizeof expirations);
    }
    // A spawn first: simba waits for its answer (CMD checks its own start
    // against the kill point), then the deadline.
    if (fds[0].revents) serve_spawn(shared, channel);
    if (fds[0].revents || (have_timer && fds[2].revents)) check();
  }
}

int watchdog_entry(void* args) { watchdog_main(*static_cast<Args*>(args)); }

} // namespace

// Without an explicit stop() (an exception unwinding through the
// supervisor) the watchdog is not disarmed: it sees the channel close and
// kills CMD's group, as when the supervisor dies. The region is not
// unmapped: the watchdog may still be running on it.
Watchdog::~Watchdog() {
  if (m_fd >= 0 && !m_left) close(m_fd);
}

Watchdog::Shared* Watchdog::shared() const { return reinterpret_cast<Shared*>(m_region); }

void Watchdog::start() {
  if (m_fd >= 0) return;
  if (!m_region) {
    // Shared with a clone by nature; with a fork it must be MAP_SHARED.
    int sharing = k_share_memory ? MAP_PRIVATE : MAP_SHARED;
    void* region = mmap(nullptr, k_region, PROT_READ | PROT_WRITE,
                        sharing | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (region == MAP_FAILED)
      throw InternalError(std::string("watchdog: mmap: ") + std::strerror(errno));
    m_region = static_cast<char*>(region);
    if (k_share_memory) mprotect(m_region + k_page, k_page, PROT_NONE); // stack guard
    new (m_region) Shared{};
  }
  // A restarted watchdog takes over the state (see set_deadline).
  shared()->deadline_ms.store(k_no_deadline);
  shared()->pgid.store(m_pgid);
  shared()->walk_by_scan = std::getenv("SIMBA_TEST_PROC_SCAN") != nullptr;
  const char* pause = std::getenv("SIMBA_TEST_WATCHDOG_PAUSE_MS");
  shared()->pause_before_setting_ms = pause ? std::atoi(pause) % 1000 : 0;
  shared()->spawn_request.store(nullptr);
  shared()->cmd_pid.store(0);
  shared()->exited_pid.store(0);
  shared()->stops.store(0);
  m_stops_seen = 0;
  // A SEQPACKET socket rather than a pipe: send(MSG_NOSIGNAL) never raises
  // SIGPIPE whatever the caller's disposition. Closing our end is the
  // "supervisor gone" signal; its end closing tells us the watchdog died.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
    throw InternalError(std::string("watchdog: socketpair: ") + std::strerror(errno));
  // The timer both of us set (see Shared). Without one (-1) the watchdog
  // makes its own and is woken to set it.
  if (m_tfd >= 0) close(m_tfd);
  m_tfd = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK);
  auto* args = new (m_region + sizeof(Shared)) Args{shared(), fds[0], m_tfd, getpid()};
  pid_t pid;
  if (k_share_memory) {
    pid = clone(watchdog_entry, m_region + k_region, CLONE_VM | SIGCHLD, args);
  } else {
    pid = fork();
    if (pid == 0) {
      close(fds[1]);
      watchdog_main(*args);
    }
  }
  if (pid < 0) {
    int err = errno;
    close(fds[0]);
    close(fds[1]);
    if (m_tfd >= 0) close(m_tfd);
    m_tfd = -1;
    throw InternalError(std::string("watchdog: clone: ") + std::strerror(err));
  }
  // The clone holds its own copy of both ends; it closes all but its own.
  close(fds[0]);
  setpgid(pid, pid); // same as the child's own call; whichever runs first
  m_fd = fds[1];
  m_pid = pid;
}

// False when the watchdog is gone (killed by someone: its end is closed).
bool Watchdog::alive() const {
  if (m_fd < 0) return false;
  pollfd p{m_fd, 0, 0};
  while (::poll(&p, 1, 0) < 0 && errno == EINTR) {
  }
  return !(p.revents & (POLLHUP | POLLERR));
}

bool Watchdog::wake() {
  char b = 0;
  for (;;) {
    // Non-blocking: only a stopped watchdog lets the buffer fill, and then
    // it could not kill anyway.
    if (::send(m_fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0) return true;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

// Sets the shared timer, or (without one) wakes the watchdog to set its own.
// False when the watchdog is gone.
bool Watchdog::arm(int64_t deadline_ms) {
  if (m_tfd >= 0 && set_timer(m_tfd, deadline_ms)) return alive();
  return wake();
}

void Watchdog::set_deadline(int64_t deadline_ms) {
  if (m_fd >= 0) {
    int64_t prev = shared()->deadline_ms.exchange(deadline_ms);
    // Later than before: the timer fires no later than the old deadline and
    // the watchdog then finds the new one. Earlier, or newly armed: the
    // timer moves (after the store: see Shared).
    bool ok = (prev != k_no_deadline && deadline_ms >= prev) ? alive() : arm(deadline_ms);
    if (ok) return;
    // Killed by someone. Its end closed when it exited, after it left the
    // region: a new one may run on it. Its zombie is collected by Child::reap.
    close(m_fd);
    m_fd = -1;
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
      n = ::recv(m_fd, &answer, 1, 0);
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
  if (m_tfd >= 0) close(m_tfd);
  m_tfd = -1;
  if (m_fd >= 0) {
    close(m_fd); // it sees the channel close with nothing to kill and exits
    m_fd = -1;
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
