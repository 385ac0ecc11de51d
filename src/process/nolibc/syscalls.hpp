#pragma once
// src/process/nolibc/: the code that runs inside the watchdog (its loop,
// its kill, the /proc walker it shares with proc_tree.cpp), which calls no
// libc; and here the system calls it makes instead, each wrapped once.
//
// Why no libc: the watchdog is a clone of simba that shares simba's memory
// (CLONE_VM, no CLONE_THREAD; see watchdog.cpp) and runs on a small stack of
// its own. libc there is not safe: its errno and its locks belong to simba's
// thread (a lock simba holds when it is stopped would never be released),
// malloc's arenas are simba's, and so is its thread descriptor (the thread id
// it keeps for raise() and its locks). So every call below is a system
// call instruction of our own and answers -errno instead of touching errno.
// tests/unit/test_process_nolibc.sh fails when an object of this folder
// comes to call any function it does not define itself.
//
// Where there is no stub for the architecture (k_raw_syscalls false) the
// watchdog is a fork with memory of its own, and libc's syscall() is safe.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if !defined(__x86_64__) && !defined(__aarch64__)
#include <unistd.h>

#include <cerrno>
#endif

namespace simba::process::raw {

#if defined(__x86_64__)
constexpr bool k_raw_syscalls = true;
static inline long syscall6(long n, long a, long b, long c, long d, long e, long f) {
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
constexpr bool k_raw_syscalls = true;
static inline long syscall6(long n, long a, long b, long c, long d, long e, long f) {
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
constexpr bool k_raw_syscalls = false; // forked: errno is the child's own
static inline long syscall6(long n, long a, long b, long c, long d, long e, long f) {
  long r = ::syscall(n, a, b, c, d, e, f);
  return r == -1 ? -errno : r;
}
#endif

template <typename T> static inline long as_arg(T v) {
  if constexpr (std::is_null_pointer_v<T>)
    return 0;
  else if constexpr (std::is_pointer_v<T>)
    return reinterpret_cast<long>(v);
  else
    return static_cast<long>(v);
}

// call(SYS_x, args...): the result, or -errno.
template <typename... A> static inline long call(long n, A... args) {
  static_assert(sizeof...(A) <= 6, "at most six arguments");
  long a[6] = {as_arg(args)...};
  return syscall6(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

// ---- Each call, once. All answer -errno on failure. ------------------------

[[noreturn]] static inline void exit_process() {
  for (;;) call(SYS_exit, 0);
}
static inline long getpid() { return call(SYS_getpid); }
static inline long kill(long pid, int signo) { return call(SYS_kill, pid, signo); }
static inline long open_read(const char* path, int flags) {
  return call(SYS_openat, AT_FDCWD, path, flags | O_RDONLY | O_CLOEXEC);
}
static inline long read(long fd, void* buf, size_t len) { return call(SYS_read, fd, buf, len); }
static inline long close(long fd) { return call(SYS_close, fd); }
static inline long getdents64(long fd, void* buf, size_t len) {
  return call(SYS_getdents64, fd, buf, len);
}
static inline long fd_flags(long fd) { return call(SYS_fcntl, fd, F_GETFD); }
static inline long send_byte(long fd, char byte) {
  return call(SYS_sendto, fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL, nullptr, 0);
}
static inline long recv_nowait(long fd, void* buf, size_t len) {
  return call(SYS_recvfrom, fd, buf, len, MSG_DONTWAIT, nullptr, nullptr);
}
static inline long waitid(int idtype, long id, siginfo_t* info, int options) {
  return call(SYS_waitid, idtype, id, info, options, nullptr);
}
static inline long ppoll(pollfd* fds, unsigned n, const timespec* timeout) {
  return call(SYS_ppoll, fds, n, timeout, nullptr, 0);
}
static inline void sleep_ms(long ms) {
  timespec pause{time_t(ms / 1000), (ms % 1000) * 1000000L};
  call(SYS_nanosleep, &pause, nullptr);
}
static inline long prctl(int option, long arg) { return call(SYS_prctl, option, arg); }
static inline long setpgid(long pid, long pgid) { return call(SYS_setpgid, pid, pgid); }
// The kernel's sigset is one 64-bit word on the architectures above.
static inline long block_all_signals() {
  uint64_t all = ~uint64_t(0);
  return call(SYS_rt_sigprocmask, SIG_SETMASK, &all, nullptr, sizeof all);
}
static inline long default_action(int signo) {
  struct {
    unsigned long handler, flags, restorer, mask;
  } action{};
  return call(SYS_rt_sigaction, signo, &action, nullptr, sizeof action.mask);
}
static inline long signalfd(int signo, int flags) {
  uint64_t mask = uint64_t(1) << (signo - 1);
  return call(SYS_signalfd4, -1, &mask, sizeof mask, flags);
}
static inline long timerfd_create(int clock, int flags) {
  return call(SYS_timerfd_create, clock, flags);
}
static inline long timerfd_settime(long fd, int flags, const itimerspec* spec) {
  return call(SYS_timerfd_settime, fd, flags, spec, nullptr);
}
static inline int64_t boottime_ms() {
  timespec ts{};
  call(SYS_clock_gettime, CLOCK_BOOTTIME, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

} // namespace simba::process::raw
