#pragma once
// CMD: spawned directly (no shell), in its own process group, with
// PR_SET_PDEATHSIG(SIGKILL), as the terminal's foreground group when simba
// has the terminal (DESIGN §7). With a watchdog, CMD is the watchdog's
// child (see watchdog.hpp: what CMD starts then cannot outlive a killed
// simba); its exits and stops come to us relayed.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace simba::process {

// Resolves argv[0] against PATH as execvp would. Throws simba::Error with
// exit code 127 (not found) or 126 (found but not executable) — before any
// lock is taken.
std::string resolve_command(const std::string& name);

struct ExitStatus {
  bool signaled = false;
  int code = 0; // exit code, or the signal number when signaled
  int shell_code() const { return signaled ? 128 + code : code; }
};

class Watchdog;

class Child {
public:
  // Makes this process a child subreaper (so descendants that leave CMD's
  // process group are still ours to stop, also when the watchdog, CMD's
  // parent and their first subreaper, is gone) and notes whether stdin is our
  // controlling terminal with us in the foreground. With `watchdog`, CMD is
  // started as its child; without, as ours.
  explicit Child(Watchdog* watchdog = nullptr);
  ~Child(); // takes the terminal back if CMD had it

  // Starts `path` with `argv` and the environment `env` ("K=V" strings) in a
  // new process group. `signal_mask` is restored in the child. Throws
  // simba::Error 126/127 if exec fails, and TooLate (nothing started) when
  // the child finds CLOCK_BOOTTIME at or past `not_after_ms` just before exec.
  struct TooLate {};
  void spawn(const std::string& path, const std::vector<std::string>& argv,
             const std::vector<std::string>& env, const sigset_t& signal_mask,
             int64_t not_after_ms = INT64_MAX);

  pid_t pid() const { return m_pid; }
  // When CMD is the watchdog's child: a descriptor (a pidfd) that becomes
  // readable when CMD exits. We then read its status from /proc while it is
  // a zombie (reap()), waking with the watchdog rather than after its
  // relay: one wake-up fewer between CMD's end and the release. -1
  // otherwise (our own child, a kernel without pidfd_open, after the exit):
  // the relay's SIGCHLD alone.
  int exit_fd() const { return m_exit_fd; }
  pid_t pgid() const { return m_pid; }
  bool running() const { return m_pid > 0 && !m_exited; }

  // Sends `signo` to CMD's whole process group and to every other descendant
  // of simba (those that moved to groups of their own), except `spare`
  // (the watchdog; what runs below it is signalled).
  void signal_all(int signo, pid_t spare = -1) const;
  // Sends `signo` to CMD's process group only (forwarding).
  void signal_group(int signo) const;

  // Reaps every exited child of simba (WNOHANG). Returns true once when CMD
  // itself has exited, filling `status`. Handles CMD being stopped from the
  // terminal (Ctrl-Z): takes the terminal back, stops simba, and on SIGCONT
  // hands the terminal back and continues CMD.
  bool reap(ExitStatus& status, pid_t spare = -1);

  // True while any descendant of simba other than `spare` itself is alive.
  bool descendants_alive(pid_t spare = -1) const;

private:
  // Whether CMD's process group may still exist (see signal_group).
  bool group_may_exist() const;
  void follow_stop(int signo);
  void exited(int wait_status, ExitStatus& status);
  void close_exit_fd();
  bool exit_fd_ready() const;

  Watchdog* m_watchdog = nullptr;
  int m_exit_fd = -1;
  pid_t m_pid = -1;
  bool m_exited = false;
  int m_tty = -1; // our controlling terminal when we were in the foreground
};

} // namespace simba::process
