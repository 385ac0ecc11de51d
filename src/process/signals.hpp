#pragma once
// The supervisor's signals: blocked and read from a signalfd in the poll loop
// (no work in handlers). The child gets the original mask and default
// dispositions back before exec.
#include <csignal>
#include <string>
#include <vector>

namespace simba::process {

class SignalChannel {
public:
  // Blocks SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH,
  // SIGCHLD, SIGTTOU, SIGTTIN, SIGCONT and opens a signalfd for them (except TTOU/TTIN, which stay
  // blocked so tcsetpgrp from the background works). Ignores SIGPIPE.
  SignalChannel();
  ~SignalChannel(); // restores the mask
  SignalChannel(const SignalChannel&) = delete;
  SignalChannel& operator=(const SignalChannel&) = delete;

  int fd() const { return m_fd; }
  // All signals pending on the fd (non-blocking read), in arrival order.
  std::vector<int> read_pending();
  // The mask to restore in a child before exec.
  const sigset_t& original_mask() const { return m_original; }
  // The process exits after this channel: its destructor leaves USR1 and
  // USR2 blocked (a storm of them at CMD's exit must not kill simba once
  // it has released).
  void keep_blocked_at_exit() { m_keep_blocked = true; }

  // The signals simba forwards to CMD's process group (DESIGN §7).
  static bool is_forwarded(int signo);

private:
  int m_fd = -1;
  sigset_t m_original{};
  bool m_keep_blocked = false;
};

// Ends the process by `signo` (default action, unblocked), as if it had
// not been caught. Returns only if that signal does not end a process.
void end_by_signal(int signo);

// "TERM", "SIGTERM", "15" -> 15; throws UsageError otherwise.
int parse_signal(const std::string& text);
// 15 -> "SIGTERM"
std::string signal_name(int signo);

} // namespace simba::process
