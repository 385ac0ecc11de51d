#include "process/child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "process/proc_tree.hpp"
#include "process/watchdog.hpp"
#include "sys/clock.hpp"

namespace simba::process {
namespace {

// execvp's fallback when PATH is unset.
constexpr const char* k_default_path = "/bin:/usr/bin";
// Stack of the CLONE_VM child: it only makes a handful of syscalls. One
// for every spawn (the parent waits until the child has exec'd or failed),
// static so that a spawn allocates no memory (a heap block this size would
// grow and shrink the heap: two more system calls on a hand-over's path).
constexpr size_t k_child_stack_size = 64 * 1024;
alignas(16) char g_child_stack[k_child_stack_size];

// Makes `pgrp` the terminal's foreground group. SIGTTOU is blocked around
// the call: from a background group tcsetpgrp() would otherwise stop us.
void set_foreground(int tty, pid_t pgrp) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(tty, pgrp);
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

// Everything the child needs, prepared before the clone: the child shares
// our memory and must not allocate.
struct SpawnArgs {
  const char* path;
  char* const* argv;
  char* const* envp;
  const sigset_t* mask;
  pid_t parent; // who clones us: simba, or the watchdog
  int tty;
  int64_t not_after_ms;    // CLOCK_BOOTTIME: too late to start CMD from then on
  volatile int exec_errno; // written by the child when execve fails
};

int child_main(void* raw) {
  auto* a = static_cast<SpawnArgs*>(raw);
  setpgid(0, 0);
  if (a->tty >= 0) tcsetpgrp(a->tty, getpid()); // all signals blocked here
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != a->parent) _exit(127); // the parent died before PDEATHSIG was set

  // simba installs no handlers (signals come through a signalfd); the only
  // disposition of its own is the ignored SIGPIPE. Other ignored signals
  // (nohup) stay so, as with any exec.
  signal(SIGPIPE, SIG_DFL);
  // simba may have been stopped between the lease's reply and here: a CMD
  // that would start past its kill point does not start at all.
  if (sys::boottime_ms() >= a->not_after_ms) {
    a->exec_errno = ETIME;
    _exit(127);
  }
  sigprocmask(SIG_SETMASK, a->mask, nullptr);
  execve(a->path, a->argv, a->envp);
  a->exec_errno = errno ? errno : ENOEXEC;
  _exit(127);
}

int exec_errno_code(int err) {
  return (err == ENOENT || err == ENOTDIR) ? exit_code::k_not_found : exit_code::k_not_executable;
}

// execve's argv/envp: pointers into `strings`, then a null.
std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Without a watchdog (the fork fallback): CMD is our own clone.
pid_t clone_directly(SpawnArgs& args, uintptr_t stack_top) {
  // No signal may run a handler in the child while it shares our memory;
  // the child restores its signal mask just before execve.
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  // CLONE_VM|CLONE_VFORK: no page-table copy, and we resume only once the
  // child has exec'd or failed, so `args` stays valid and exec_errno is set.
  pid_t pid = clone(child_main, reinterpret_cast<void*>(stack_top),
                    CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  int clone_errno = errno;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0)
    throw InternalError(std::string("cannot start ") + args.path +
                        ": clone: " + std::strerror(clone_errno));
  return pid;
}

} // namespace

std::string resolve_command(const std::string& name) {
  if (name.empty()) throw Error(exit_code::k_not_found, "command not found: " + name);

  // 0: nothing found yet; otherwise the first "exists but cannot run".
  int problem = 0;
  auto check = [&](const std::string& candidate) -> bool {
    struct stat st;
    if (stat(candidate.c_str(), &st) != 0) return false;
    if (S_ISDIR(st.st_mode)) {
      if (!problem) problem = EISDIR;
      return false;
    }
    if (!S_ISREG(st.st_mode) || faccessat(AT_FDCWD, candidate.c_str(), X_OK, AT_EACCESS) != 0) {
      if (!problem) problem = EACCES;
      return false;
    }
    return true;
  };

  if (name.find('/') != std::string::npos) {
    if (check(name)) return name;
  } else {
    const char* env_path = std::getenv("PATH");
    std::string path = env_path ? env_path : k_default_path;
    size_t start = 0;
    for (;;) {
      size_t end = path.find(':', start);
      std::string dir =
          path.substr(start, end == std::string::npos ? std::string::npos : end - start);
      // An empty entry means the current directory, as in execvp.
      std::string candidate = dir.empty() ? "./" + name : dir + "/" + name;
      if (check(candidate)) return candidate;
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  if (problem == EISDIR) throw Error(exit_code::k_not_executable, name + ": is a directory");
  if (problem) throw Error(exit_code::k_not_executable, name + ": Permission denied");
  throw Error(exit_code::k_not_found, "command not found: " + name);
}

Child::Child(Watchdog* watchdog)
    : m_watchdog(watchdog && Watchdog::can_spawn() ? watchdog : nullptr) {
  // Descendants that leave CMD's group (setsid, double fork) re-parent to
  // us instead of init, so they can still be found and stopped.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // tcgetpgrp() fails unless fd 0 is our controlling terminal.
  if (isatty(0) && tcgetpgrp(0) == getpgrp()) m_tty = 0;
}

Child::~Child() {
  if (m_tty >= 0 && m_pid > 0 && !m_exited) set_foreground(m_tty, getpgrp());
  close_exit_fd();
}

void Child::close_exit_fd() {
  if (m_exit_fd >= 0) close(m_exit_fd);
  m_exit_fd = -1;
}

bool Child::exit_fd_ready() const {
  if (m_exit_fd < 0) return false;
  pollfd p{m_exit_fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

void Child::spawn(const std::string& path, const std::vector<std::string>& argv,
                  const std::vector<std::string>& env, const sigset_t& signal_mask,
                  int64_t not_after_ms) {
  std::vector<char*> argv_ptrs = c_strings(argv);
  std::vector<char*> env_ptrs = c_strings(env);

  // Only hand over a terminal we still hold: after Ctrl-Z and `bg` while
  // waiting for the mutex, the shell owns it again.
  if (m_tty >= 0 && tcgetpgrp(m_tty) != getpgrp()) m_tty = -1;
  SpawnArgs args{path.c_str(),    argv_ptrs.data(),
                 env_ptrs.data(), &signal_mask,
                 getpid(),        m_tty,
                 not_after_ms,    0};
  // Stacks grow down on every Linux target we build for; keep it 16-aligned.
  auto top = reinterpret_cast<uintptr_t>(g_child_stack + k_child_stack_size) & ~uintptr_t(15);

  pid_t pid;
  if (m_watchdog) {
    // The watchdog clones the child (CLONE_VM|CLONE_VFORK, on the same
    // stack) and answers once it has exec'd or failed; we wait for that
    // answer in a system call, so the child's few libc calls (all
    // async-signal-safe) meet no libc state of ours in use. The watchdog
    // blocks every signal; the child restores `signal_mask`.
    m_watchdog->start();
    args.parent = m_watchdog->pid();
    pid = m_watchdog->spawn(child_main, &args, reinterpret_cast<void*>(top));
  } else {
    pid = clone_directly(args, top);
  }

  if (args.exec_errno != 0) {
    int st = 0;
    // The watchdog reaps its own children.
    while (!m_watchdog && waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (m_tty >= 0) set_foreground(m_tty, getpgrp());
    int err = args.exec_errno;
    if (err == ETIME) throw TooLate();
    throw Error(exec_errno_code(err), "cannot execute " + path + ": " + std::strerror(err));
  }
  // The child made its own group before exec (no setpgid here: CLONE_VFORK
  // resumes us only after that).
  m_pid = pid;
  m_exited = false;
  close_exit_fd();
  if (m_watchdog) m_exit_fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

void Child::signal_group(int signo) const {
  if (m_pid > 1 && group_may_exist()) kill(-m_pid, signo);
}

// Once CMD has exited and is reaped its number is free: pids wrap, and a
// later process group may bear it (a signal forwarded between lead's or
// schedule's runs went to whoever had it). The group lives on only while a
// process of it does, all of them ours (CMD's descendants), zombies
// included: they keep the number taken.
bool Child::group_may_exist() const {
  if (!m_exited) return true;
  for (const proc_tree::ProcInfo& p : proc_tree::descendants(getpid()))
    if (p.pgrp == m_pid) return true;
  return false;
}

void Child::signal_all(int signo, pid_t spare) const {
  signal_group(signo);
  proc_tree::signal_descendants(getpid(), signo, spare, m_pid);
}

// Job control from a terminal (Ctrl-Z, background read/write): stop simba
// too so the shell sees the job stopped, then resume CMD with us.
void Child::follow_stop(int signo) {
  if ((signo != SIGTSTP && signo != SIGTTIN && signo != SIGTTOU) || !isatty(0)) return;
  if (m_tty >= 0) set_foreground(m_tty, getpgrp());
  raise(SIGSTOP);
  // Continued: `fg` made us the foreground group, `bg` did not.
  m_tty = (tcgetpgrp(0) == getpgrp()) ? 0 : -1;
  if (m_tty >= 0) set_foreground(m_tty, m_pid);
  signal_group(SIGCONT);
}

void Child::exited(int st, ExitStatus& status) {
  status.signaled = WIFSIGNALED(st);
  status.code = status.signaled ? WTERMSIG(st) : WEXITSTATUS(st);
  m_exited = true;
  close_exit_fd();
  if (m_tty >= 0) set_foreground(m_tty, getpgrp());
}

bool Child::reap(ExitStatus& status, pid_t spare) {
  (void)spare; // every reaped pid is collected; the spare's owner tolerates ECHILD
  bool cmd_exited = false;
  for (;;) {
    int st = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG | WUNTRACED);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break; // ECHILD
    }
    if (pid == 0) break;
    // Orphans and the watchdog are collected. CMD comes here when it is
    // our child, or when its parent, the watchdog, died (PDEATHSIG).
    if (pid != m_pid || m_exited) continue;
    if (WIFSTOPPED(st)) {
      follow_stop(WSTOPSIG(st));
    } else if (WIFEXITED(st) || WIFSIGNALED(st)) {
      exited(st, status);
      cmd_exited = true;
    }
  }
  // The watchdog's child: what it relayed.
  int signo = 0, st = 0;
  if (m_watchdog && m_pid > 0 && !m_exited) {
    if (m_watchdog->take_stop(signo)) follow_stop(signo);
    bool known = m_watchdog->take_exit(m_pid, st);
    if (!known && exit_fd_ready()) {
      // CMD has exited and the watchdog has not told yet: read the status
      // while CMD is a zombie. If the watchdog reaped it meanwhile (or the
      // status is not ours to read), its relay is on the way: wait for its
      // SIGCHLD, without the descriptor, which stays readable.
      known = proc_tree::zombie_wait_status(m_pid, st) || m_watchdog->take_exit(m_pid, st);
      if (!known) close_exit_fd();
    }
    if (known) {
      exited(st, status);
      cmd_exited = true;
    }
  }
  return cmd_exited;
}

bool Child::descendants_alive(pid_t spare) const {
  return proc_tree::any_descendant_alive(getpid(), spare);
}

} // namespace simba::process
