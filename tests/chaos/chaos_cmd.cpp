// The CMD of the chaos harness (scripts/chaos): it proves or disproves that
// two CMDs never run at once. It takes an exclusive flock on a shared file —
// the kernel drops it the instant this process dies, however it dies — and
// records "overlap" if another CMD still holds it. Records go to one shared
// log with O_APPEND, times on CLOCK_MONOTONIC (one host, one clock):
//   start <token> <contender> <ns> <pid>
//   overlap <token> <contender> <ns> <pid>
//   end <token> <contender> <ns> <pid>
//   fenced <token> <contender> <ns> <pid>
// The fencing resource is the file LOCKFILE.fence: CMD writes its token
// there at its start (before it waits for the flock, so that an overlap
// reaches it) and at its end; a token smaller than the one stored is refused
// and recorded as "fenced". Zero refusals when no overlap happened; when one
// did, they show that the token orders the writes.
// With "daemon" it also leaves a daemon behind (setsid and a double fork)
// that keeps the flock held and ignores SIGTERM: it must die with CMD's
// lease like CMD itself (simba's leftover handling, or its watchdog when
// simba is killed), or the next CMD records "overlap".
// Under --slots N (SIMBA_SLOTS above 1, scripts/chaos --slots N) there are
// N locks, LOCKFILE.0 to LOCKFILE.<N-1>: CMD takes any free one, and records
// "overlap" when all N are held (more than N CMDs at once); the fencing
// resource is its slot's (LOCKFILE.<SIMBA_SLOT>.fence: a slot's leases
// follow each other, the slots' run side by side), and the contender field
// is "<contender>:s<SIMBA_SLOT>".
// Usage: simba_chaos_cmd LOG LOCKFILE MILLISECONDS [daemon]
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace {

int g_log = -1;
std::string g_token, g_contender, g_fence;

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

// The resource's check and write under its own short flock: atomic.
// SIGTERM is blocked meanwhile: its handler writes too and would wait for
// this flock for ever.
void fence_write() {
  if (g_token == "?") return;
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigaddset(&term, SIGINT);
  sigprocmask(SIG_BLOCK, &term, &old);
  int fd = open(g_fence.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(123);
  char seen[32] = {};
  ssize_t n = pread(fd, seen, sizeof seen - 1, 0);
  if (n > 0 && strtoull(g_token.c_str(), nullptr, 10) < strtoull(seen, nullptr, 10)) {
    record("fenced");
  } else if (pwrite(fd, g_token.c_str(), g_token.size() + 1, 0) < 0) {
    _exit(124);
  }
  close(fd); // drops the flock
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

void on_term(int) {
  fence_write();
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
  const char* slots_env = getenv("SIMBA_SLOTS");
  const char* slot_env = getenv("SIMBA_SLOT");
  int slots = slots_env ? atoi(slots_env) : 1;
  std::string lock_path = argv[2];
  if (slots > 1) {
    g_contender += std::string(":s") + (slot_env ? slot_env : "?");
    lock_path += std::string(".") + (slot_env ? slot_env : "0");
  }
  g_log = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  int lock = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (g_log < 0 || lock < 0) return 121;
  g_fence = lock_path + ".fence";
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  bool alone = false;
  if (slots > 1) {
    // Any of the N locks: all held means N other CMDs run.
    for (int k = 0; k < slots && !alone; ++k) {
      int fd = open((std::string(argv[2]) + "." + std::to_string(k)).c_str(),
                    O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) return 121;
      alone = flock(fd, LOCK_EX | LOCK_NB) == 0;
      if (alone) {
        close(lock);
        lock = fd;
      } else {
        close(fd);
      }
    }
  } else {
    alone = flock(lock, LOCK_EX | LOCK_NB) == 0;
  }
  if (!alone) record("overlap");
  fence_write();
  if (!alone) flock(lock, LOCK_EX); // keep going: the checker reports it
  record("start");
  if (daemon) leave_daemon();
  long ms = atol(argv[3]);
  timespec d{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&d, &d) != 0) {
  }
  fence_write();
  record("end");
  return 0;
}
