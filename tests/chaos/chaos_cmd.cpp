// The CMD of the chaos harness (scripts/chaos): it proves or disproves that
// two CMDs never run at once. It takes an exclusive flock on a shared file —
// the kernel drops it the instant this process dies, however it dies — and
// records "overlap" if another CMD still holds it. Records go to one shared
// log with O_APPEND, times on CLOCK_MONOTONIC (one host, one clock):
//   start <token> <contender> <ns> <pid>
//   overlap <token> <contender> <ns> <pid>
//   end <token> <contender> <ns> <pid>
// With "daemon" it also leaves a daemon behind (setsid and a double fork)
// that keeps the flock held and ignores SIGTERM: it must die with CMD's
// lease like CMD itself (simba's leftover handling, or its watchdog when
// simba is killed), or the next CMD records "overlap".
// Usage: simba_chaos_cmd LOG LOCKFILE MILLISECONDS [daemon]
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

namespace {

int g_log = -1;
std::string g_token, g_contender;

long long now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void record(const char* what) {
  char line[512];
  int n = snprintf(line, sizeof line, "%s %s %s %lld %d\n", what, g_token.c_str(),
                   g_contender.c_str(), now_ns(), (int)getpid());
  if (n > 0 && write(g_log, line, size_t(n)) < 0) _exit(120);
}

void on_term(int) {
  record("end");
  _exit(143);
}

// A daemon as a shell script makes one: fork, setsid, fork again, the
// middle process exits. It inherits the locked descriptor: the lock stays
// held while it lives.
void leave_daemon() {
  pid_t middle = fork();
  if (middle < 0) _exit(122);
  if (middle == 0) {
    setsid();
    if (fork() == 0) {
      signal(SIGTERM, SIG_IGN);
      signal(SIGINT, SIG_IGN);
      for (;;) pause();
    }
    _exit(0);
  }
  waitpid(middle, nullptr, 0);
}

} // namespace

int main(int argc, char** argv) {
  bool daemon = argc == 5 && std::string(argv[4]) == "daemon";
  if (argc != 4 && !daemon) {
    fprintf(stderr, "usage: simba_chaos_cmd LOG LOCKFILE MILLISECONDS [daemon]\n");
    return 2;
  }
  const char* token = getenv("SIMBA_FENCING_TOKEN");
  const char* contender = getenv("SIMBA_CONTENDER_ID");
  g_token = token ? token : "?";
  g_contender = contender ? contender : "?";
  g_log = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  int lock = open(argv[2], O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (g_log < 0 || lock < 0) return 121;
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  if (flock(lock, LOCK_EX | LOCK_NB) != 0) {
    record("overlap");
    flock(lock, LOCK_EX); // keep going: the checker reports it
  }
  record("start");
  if (daemon) leave_daemon();
  long ms = atol(argv[3]);
  timespec d{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&d, &d) != 0) {
  }
  record("end");
  return 0;
}
