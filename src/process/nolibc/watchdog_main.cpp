#include "process/nolibc/watchdog_main.hpp"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

#include <cerrno>

#include "process/nolibc/proc_walk.hpp"
#include "process/nolibc/syscalls.hpp"
#include "process/nolibc/watchdog_kill.hpp"
#include "process/nolibc/watchdog_shared.hpp"

namespace simba::process {
namespace {

using watchdog_kill::kill_everything;
using watchdog_kill::Mandate;

// The watchdog's own state, on its stack.
struct State {
  Watchdog::Shared& shared;
  long supervisor;
  long channel;
  long children = -1; // SIGCHLD descriptor
  long tfd = -1;
  bool have_timer = false;
  int64_t timer_at = k_no_deadline; // when the timer (or the poll fallback) fires
};

// Closes every close-on-exec descriptor but `a` and `b`. What stays is what
// simba inherited (its stdin, stdout, stderr, any other the caller passed)
// and is CMD's to inherit in turn (spawn). The others are simba's own (a
// database, a socket): holding them would keep them open past simba.
void close_private_fds(long a, long b) {
  struct Keep {
    long a, b;
  } keep{a, b};
  char dents[1024];
  proc_walk::each_numbered_entry(
      "/proc/self/fd", dents, sizeof dents, proc_walk::Names::fds,
      [](void* c, long fd) {
        auto& k = *static_cast<Keep*>(c);
        if (fd == k.a || fd == k.b) return;
        long flags = raw::fd_flags(fd);
        if (flags >= 0 && (flags & FD_CLOEXEC)) raw::close(fd);
      },
      &keep);
}

// Runs the supervisor's spawn() request, if any, and answers it. The one
// libc function the watchdog calls is clone(): an assembly wrapper around
// the system call that takes no lock (a return to a new stack cannot be
// written in C). It writes errno only when the call fails, while simba
// waits for our answer.
void serve_spawn(Watchdog::Shared& shared, long channel) {
  Watchdog::SpawnRequest* req = shared.spawn_request.exchange(nullptr);
  if (!req) return;
  // A new CMD: what is relayed from now on is its own.
  shared.stops.store(0);
  shared.exited_pid.store(0);
  long pid = ::clone(req->entry, req->stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD, req->arg);
  if (pid > 0) shared.cmd_pid.store(int32_t(pid));
  req->pid = pid > 0 ? pid : -1;
  raw::send_byte(channel, 1);
}

// Stores CMD's stop or end in the shared block. False for other events.
bool relay(Watchdog::Shared& shared, const siginfo_t& info) {
  int status = info.si_status & 0x7f;
  switch (info.si_code) {
  case CLD_STOPPED:
    shared.stop_signal.store(info.si_status);
    shared.stops.fetch_add(1);
    return true;
  case CLD_EXITED: status = (info.si_status & 0xff) << 8; break;
  case CLD_KILLED: break;
  case CLD_DUMPED: status |= 0x80; break;
  default: return false;
  }
  shared.exit_status.store(status); // as waitpid() gives it
  shared.exited_pid.store(info.si_pid);
  return true;
}

// Reaps every child that exited (CMD, or an orphan of CMD's tree that came
// to us) and relays CMD's exit and stops to the supervisor, with a SIGCHLD
// as if CMD were its child. The end of an orphan is told too: the
// supervisor waits for all of CMD's tree to be gone before it releases, and
// nothing else would wake it.
void reap_children(Watchdog::Shared& shared, long supervisor) {
  bool orphan_gone = false;
  for (;;) {
    siginfo_t info{};
    long r = raw::waitid(P_ALL, 0, &info, WEXITED | WSTOPPED | WNOHANG);
    if (r == -EINTR) continue;
    if (r < 0 || info.si_pid == 0) break;
    if (info.si_pid != shared.cmd_pid.load())
      orphan_gone = orphan_gone || info.si_code != CLD_STOPPED;
    else if (relay(shared, info))
      raw::kill(supervisor, SIGCHLD);
  }
  if (orphan_gone) raw::kill(supervisor, SIGCHLD);
}

// CMD's group, while it may exist: once we have reaped CMD its number is
// free, and pids wrap (another process group may bear it). The group's
// other members, if any, are below us still, where the walk finds them.
long cmd_group(const Watchdog::Shared& shared) {
  long pgid = shared.pgid.load();
  return pgid == shared.exited_pid.load() ? 0 : pgid;
}

// The supervisor died (kill -9, a crash) or exited: kill CMD's group and
// everything below us, then go. Its pid may already name someone else: our
// own subtree is what we walk.
[[noreturn]] void outlive_supervisor(Watchdog::Shared& shared) {
  long pgid = cmd_group(shared);
  if (pgid > 1) raw::kill(-pgid, SIGKILL);
  siginfo_t info{};
  // No child at all (the common end of a run): nothing to walk.
  if (raw::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != -ECHILD)
    kill_everything(raw::getpid(), pgid, shared.walk_by_scan);
  raw::exit_process();
}

// Kills when the shared deadline has passed; otherwise sets the timer to
// it. After a kill the deadline is cleared unless the supervisor stored a
// new one meanwhile (then it is looked at in turn): either way the
// supervisor's next deadline finds the watchdog disarmed, or is seen here.
// The supervisor sets the timer too (after storing a deadline): a setting
// of ours from a deadline read before its store could undo its setting,
// so the deadline is read again after ours and looked at anew if it moved.
void check_deadline(State& s) {
  for (;;) {
    int64_t d = s.shared.deadline_ms.load();
    if (d != k_no_deadline && raw::boottime_ms() >= d) {
      kill_everything(s.supervisor, cmd_group(s.shared), s.shared.walk_by_scan,
                      Mandate{&s.shared.deadline_ms, d});
      if (!s.shared.deadline_ms.compare_exchange_strong(d, k_no_deadline)) continue;
      d = k_no_deadline;
    }
    s.timer_at = d;
    if (s.shared.pause_before_setting_ms > 0) raw::sleep_ms(s.shared.pause_before_setting_ms);
    if (s.have_timer) s.have_timer = set_timer(s.tfd, d);
    if (s.shared.deadline_ms.load() != d) continue;
    return;
  }
}

// Becomes the watchdog: its name, its place as the subreaper of CMD's tree,
// its own group and signal mask, its descriptors and its timer.
void become_watchdog(State& s, long peer, long timer) {
  // The supervisor's end of the channel, by its number: were it left to
  // close_private_fds, a file limit that leaves no descriptor free for
  // /proc/self/fd would keep it open here, the channel would never close,
  // and the watchdog would outlive simba (holding simba's stdout).
  raw::close(peer);
  raw::prctl(PR_SET_NAME, long("simba-watchdog"));
  // Orphans of CMD's tree come to us, not to simba: they must not go to
  // init with simba when it dies.
  raw::prctl(PR_SET_CHILD_SUBREAPER, 1);
  // SIGCHLD at its default: ignored (inherited so from simba's caller), the
  // kernel would reap our children itself and CMD's exit would be lost.
  raw::default_action(SIGCHLD);
  // Own process group: signals meant for simba's group (and a terminal's
  // Ctrl-C / Ctrl-Z) must not reach the watchdog; nor may any other signal
  // but SIGKILL and SIGSTOP, which nobody can block.
  raw::setpgid(0, 0);
  raw::block_all_signals();
  close_private_fds(s.channel, timer);
  s.children = raw::signalfd(SIGCHLD, SFD_NONBLOCK | SFD_CLOEXEC);
  // Our own timer when the supervisor could not make one: it then wakes us
  // to arm it.
  s.tfd = timer >= 0 ? timer : raw::timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK);
  s.have_timer = s.tfd >= 0;
}

// Empties the channel. Returns false once it closed: the supervisor is gone.
bool drain_channel(long channel) {
  for (;;) {
    char wake[16];
    long r = raw::recv_nowait(channel, wake, sizeof wake);
    if (r > 0 || r == -EINTR) continue;
    return r == -EAGAIN || r == -EWOULDBLOCK;
  }
}

// How long ppoll may sleep: forever with a timer; without one, until the
// deadline but at most a second, so a suspend cannot stretch it by much.
// Null: no limit. False when the deadline is due now.
bool poll_timeout(const State& s, timespec& timeout, timespec*& limit) {
  limit = nullptr;
  if (s.have_timer || s.timer_at == k_no_deadline) return true;
  int64_t left = s.timer_at - raw::boottime_ms();
  if (left <= 0) return false;
  if (left > 1000) left = 1000;
  timeout.tv_sec = time_t(left / 1000);
  timeout.tv_nsec = long(left % 1000) * 1000000L;
  limit = &timeout;
  return true;
}

// The watchdog's life: it sleeps until simba wakes it (a spawn, a deadline
// without a shared timer, or its end), a child of its changes state, or the
// timer fires.
[[noreturn]] void watchdog_loop(State& s) {
  for (;;) {
    timespec timeout{};
    timespec* limit = nullptr;
    if (!poll_timeout(s, timeout, limit)) {
      check_deadline(s);
      continue;
    }
    pollfd fds[3] = {
        {int(s.channel), POLLIN, 0}, {int(s.children), POLLIN, 0}, {int(s.tfd), POLLIN, 0}};
    long n = raw::ppoll(fds, s.have_timer ? 3 : 2, limit);
    if (n < 0) {
      if (n == -EINTR) continue;
      // Cannot wait: failing safe means killing now, and again until
      // waiting works (a CMD started meanwhile is killed as well).
      kill_everything(s.supervisor, cmd_group(s.shared), s.shared.walk_by_scan);
      raw::sleep_ms(10);
      continue;
    }
    bool woken = fds[0].revents != 0;
    bool timer_fired = s.have_timer && fds[2].revents;
    if (woken && !drain_channel(s.channel)) outlive_supervisor(s.shared);
    if (fds[1].revents) {
      signalfd_siginfo drained[4];
      while (raw::read(s.children, drained, sizeof drained) > 0) {
      }
      reap_children(s.shared, s.supervisor);
    }
    if (timer_fired) {
      uint64_t expirations = 0;
      raw::read(s.tfd, &expirations, sizeof expirations);
    }
    // A spawn first: simba waits for its answer (CMD checks its own start
    // against the kill point). Then a wake-up or the timer both mean: look
    // at the deadline.
    if (woken) serve_spawn(s.shared, s.channel);
    if (woken || timer_fired) check_deadline(s);
  }
}

} // namespace

int watchdog_entry(void* p) {
  const WatchdogArgs& args = *static_cast<WatchdogArgs*>(p);
  State s{*args.shared, args.supervisor, args.channel};
  become_watchdog(s, args.peer, args.timer);
  watchdog_loop(s);
}

} // namespace simba::process
