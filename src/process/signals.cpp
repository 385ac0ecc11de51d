#include "process/signals.hpp"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"

namespace simba::process {
namespace {

// Read from the signalfd in the poll loop.
constexpr int k_read_signals[] = {SIGINT,  SIGTERM,  SIGHUP,  SIGQUIT, SIGUSR1,
                                  SIGUSR2, SIGWINCH, SIGCHLD, SIGCONT};
// Blocked only: with SIGTTOU blocked, tcsetpgrp() from a background group
// succeeds instead of stopping simba; SIGTTIN likewise never stops us.
constexpr int k_blocked_only[] = {SIGTTOU, SIGTTIN};

struct NamedSignal {
  const char* name; // without "SIG"
  int signo;
};
constexpr NamedSignal k_names[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
    {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM},
};

// Names signal_name() knows beyond the parseable ones (for messages only).
constexpr NamedSignal k_display_names[] = {
    {"ILL", SIGILL},       {"TRAP", SIGTRAP}, {"ABRT", SIGABRT},     {"BUS", SIGBUS},
    {"FPE", SIGFPE},       {"SEGV", SIGSEGV}, {"PIPE", SIGPIPE},     {"ALRM", SIGALRM},
    {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD}, {"CONT", SIGCONT},     {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP},     {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU},     {"URG", SIGURG},
    {"XCPU", SIGXCPU},     {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF},
    {"WINCH", SIGWINCH},   {"IO", SIGIO},     {"PWR", SIGPWR},       {"SYS", SIGSYS},
};

} // namespace

SignalChannel::SignalChannel() {
  sigset_t read_set;
  sigemptyset(&read_set);
  for (int s : k_read_signals) sigaddset(&read_set, s);
  sigset_t block_set = read_set;
  for (int s : k_blocked_only) sigaddset(&block_set, s);

  if (sigprocmask(SIG_BLOCK, &block_set, &m_original) != 0)
    throw InternalError(std::string("sigprocmask: ") + std::strerror(errno));
  m_fd = signalfd(-1, &read_set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (m_fd < 0) {
    int err = errno;
    sigprocmask(SIG_SETMASK, &m_original, nullptr);
    throw InternalError(std::string("signalfd: ") + std::strerror(err));
  }
  // A reader that went away must show up as EPIPE on a write, not kill
  // simba before it can release. The child gets SIG_DFL back (Child::spawn).
  signal(SIGPIPE, SIG_IGN);
}

SignalChannel::~SignalChannel() {
  if (m_fd >= 0) close(m_fd);
  sigset_t mask = m_original;
  if (m_keep_blocked) {
    // simba exits next: a USR1 or USR2 still pending, or coming now, must
    // not end it by its default action after the clean-up (only a stop
    // signal ends simba by a signal: Contender::finish, end_by_signal).
    sigaddset(&mask, SIGUSR1);
    sigaddset(&mask, SIGUSR2);
  }
  sigprocmask(SIG_SETMASK, &mask, nullptr);
}

std::vector<int> SignalChannel::read_pending() {
  std::vector<int> out;
  signalfd_siginfo infos[8];
  for (;;) {
    ssize_t n = read(m_fd, infos, sizeof infos);
    if (n < 0) {
      if (errno == EINTR) continue;
      break; // EAGAIN: drained
    }
    if (n == 0) break;
    size_t count = size_t(n) / sizeof(signalfd_siginfo);
    for (size_t i = 0; i < count; ++i) out.push_back(int(infos[i].ssi_signo));
    if (count < sizeof infos / sizeof infos[0]) break;
  }
  return out;
}

bool SignalChannel::is_forwarded(int signo) {
  switch (signo) {
  case SIGINT:
  case SIGTERM:
  case SIGHUP:
  case SIGQUIT:
  case SIGUSR1:
  case SIGUSR2:
  case SIGWINCH: return true;
  default: return false;
  }
}

void end_by_signal(int signo) {
  // Buffered output first: a signal's death skips exit()'s flushing.
  fflush(nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(signo, &dfl, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signo);
  sigprocmask(SIG_UNBLOCK, &only, nullptr);
  raise(signo);
}

int parse_signal(const std::string& text) {
  std::string upper;
  for (char c : text) upper += char(std::toupper(static_cast<unsigned char>(c)));

  if (!upper.empty() && upper.size() <= 3 &&
      upper.find_first_not_of("0123456789") == std::string::npos) {
    int n = std::stoi(upper);
    if (n >= 1 && n < NSIG) return n;
  }
  std::string bare = upper.compare(0, 3, "SIG") == 0 ? upper.substr(3) : upper;
  for (const NamedSignal& s : k_names)
    if (bare == s.name) return s.signo;
  throw UsageError("unknown signal '" + text + "'");
}

std::string signal_name(int signo) {
  for (const NamedSignal& s : k_names)
    if (s.signo == signo) return std::string("SIG") + s.name;
  for (const NamedSignal& s : k_display_names)
    if (s.signo == signo) return std::string("SIG") + s.name;
  if (signo >= SIGRTMIN && signo <= SIGRTMAX) {
    if (signo == SIGRTMIN) return "SIGRTMIN";
    return "SIGRTMIN+" + std::to_string(signo - SIGRTMIN);
  }
  return "SIG" + std::to_string(signo);
}

} // namespace simba::process
