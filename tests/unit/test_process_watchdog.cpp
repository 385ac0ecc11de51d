#include "process/child.hpp"
#include "process/proc_tree.hpp"
#include "process/watchdog.hpp"
#include "process_support.hpp"
#include "sys/clock.hpp"

#include <doctest/doctest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

using namespace simba::process;
using namespace simba::test;

namespace {

void sleep_until(int64_t t) {
  for (int64_t now = simba::sys::boottime_ms(); now < t; now = simba::sys::boottime_ms())
    usleep(useconds_t((t - now) * 1000));
}

// Open descriptors of `pid`.
int open_fds(pid_t pid) {
  DIR* dir = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (!dir) return -1;
  int n = 0;
  while (dirent* ent = readdir(dir))
    if (ent->d_name[0] != '.') ++n;
  closedir(dir);
  return n;
}

// Our descriptors without FD_CLOEXEC.
int inheritable_fds() {
  int n = 0;
  for (int fd = 0; fd < 1024; ++fd) {
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0 && !(flags & FD_CLOEXEC)) ++n;
  }
  return n;
}

// Whether `pid` has a descriptor open on `path`.
bool holds_file(pid_t pid, const std::string& path) {
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (!d) return false;
  bool found = false;
  while (dirent* ent = readdir(d)) {
    char target[512];
    ssize_t n = readlink((dir + "/" + ent->d_name).c_str(), target, sizeof target - 1);
    if (n > 0 && path == std::string(target, size_t(n))) found = true;
  }
  closedir(d);
  return found;
}

pid_t getppid_of(pid_t pid) {
  proc_tree::ProcInfo info;
  return proc_tree::read_stat(pid, info) ? info.ppid : -1;
}

char state_of(pid_t pid) {
  proc_tree::ProcInfo info;
  return proc_tree::read_stat(pid, info) ? info.state : '?';
}

// voluntary_ctxt_switches of `pid`: how often it went to sleep.
long voluntary_switches(pid_t pid) {
  FILE* f = fopen(("/proc/" + std::to_string(pid) + "/status").c_str(), "r");
  if (!f) return -1;
  char line[256];
  long n = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1) break;
  fclose(f);
  return n;
}

// Live members of process group `pgid`, from a scan of /proc.
int group_members(pid_t pgid) {
  int n = 0;
  DIR* dir = opendir("/proc");
  if (!dir) return -1;
  while (dirent* ent = readdir(dir)) {
    pid_t pid = pid_t(std::atoi(ent->d_name));
    proc_tree::ProcInfo info;
    if (pid > 0 && proc_tree::read_stat(pid, info) && info.pgrp == pgid && info.state != 'Z' &&
        info.state != 'X')
      ++n;
  }
  closedir(dir);
  return n;
}

// CMD: a shell with a background sleep in its group and a setsid'd sleep in
// a group of its own, both waited for.
void spawn_family(Child& c) {
  c.spawn("/bin/sh", {"sh", "-c", "setsid sleep 30 & sleep 30 & exec sleep 30"}, base_env(),
          current_mask());
  pid_t pgid = c.pgid();
  REQUIRE(wait_until(
      [&] {
        int escaped = 0;
        for (const auto& p : proc_tree::descendants(getpid()))
          if (p.pgrp != pgid && p.pgrp == p.pid && p.state != 'Z') ++escaped;
        return escaped >= 1 && group_members(pgid) >= 2;
      },
      3000));
}

void kill_and_reap(Child& c, pid_t spare = -1) {
  c.signal_all(SIGKILL, spare);
  ExitStatus st;
  CHECK(wait_until(
      [&] {
        c.reap(st);
        return !c.descendants_alive(spare);
      },
      3000));
}

} // namespace

TEST_SUITE("process::Watchdog") {
  TEST_CASE("kills CMD's group and escaped descendants at the deadline") {
    Child c;
    spawn_family(c);
    Watchdog w;
    int64_t t0 = simba::sys::boottime_ms();
    w.start();
    w.set_group(c.pgid());
    w.set_deadline(t0 + 200);
    REQUIRE(w.pid() > 0);
    CHECK(getpgid(w.pid()) == w.pid()); // a group of its own

    ExitStatus st;
    sleep_until(t0 + 100);
    CHECK_FALSE(c.reap(st));
    CHECK(wait_until([&] { return c.reap(st); }, 3000));
    int64_t elapsed = simba::sys::boottime_ms() - t0;
    CHECK(elapsed >= 199);
    CHECK(elapsed < 1500);
    CHECK(st.signaled);
    CHECK(st.code == SIGKILL);
    // The watchdog killed the escaped sleep as well (not just the group).
    CHECK(wait_until(
        [&] {
          c.reap(st);
          return !c.descendants_alive(w.pid());
        },
        5000)); // a loaded machine (load 18) once took more than 2 s
    // It stays, disarmed, for the next CMD.
    CHECK(proc_tree::is_alive(w.pid()));
    w.stop();
    CHECK(w.pid() == -1);
  }

  TEST_CASE("without /proc/.../children files, a scan of /proc finds the escaped descendants too") {
    setenv("SIMBA_TEST_PROC_SCAN", "1", 1);
    Child c;
    spawn_family(c);
    Watchdog w;
    w.start();
    unsetenv("SIMBA_TEST_PROC_SCAN");
    int64_t t0 = simba::sys::boottime_ms();
    w.set_group(c.pgid());
    w.set_deadline(t0 + 100);
    ExitStatus st;
    CHECK(wait_until([&] { return c.reap(st); }, 3000));
    CHECK(st.code == SIGKILL);
    // The setsid'd sleep (a group of its own) went as well: found by the scan.
    CHECK(wait_until(
        [&] {
          c.reap(st);
          return !c.descendants_alive(w.pid());
        },
        2000));
    w.stop();
  }

  TEST_CASE("a deadline moved forward is honoured") {
    Child c;
    c.spawn("/bin/sh", {"sh", "-c", "sleep 30 & exec sleep 30"}, base_env(), current_mask());
    Watchdog w;
    int64_t t0 = simba::sys::boottime_ms();
    w.start();
    w.set_group(c.pgid());
    w.set_deadline(t0 + 150);
    w.set_deadline(t0 + 500);
    ExitStatus st;
    sleep_until(t0 + 400);
    CHECK_FALSE(c.reap(st));
    CHECK(c.running());
    CHECK(wait_until([&] { return c.reap(st); }, 3000));
    CHECK(simba::sys::boottime_ms() - t0 >= 499);
    CHECK(st.code == SIGKILL);
    CHECK(wait_until([&] { return group_members(c.pgid()) == 0; }, 2000));
    w.stop();
    kill_and_reap(c);
  }

  TEST_CASE("a deadline moved earlier fires early") {
    Child c;
    c.spawn("/bin/sleep", {"sleep", "30"}, base_env(), current_mask());
    Watchdog w;
    int64_t t0 = simba::sys::boottime_ms();
    w.start();
    w.set_group(c.pgid());
    w.set_deadline(t0 + 20000);
    w.set_deadline(t0 + 50);
    ExitStatus st;
    CHECK(wait_until([&] { return c.reap(st); }, 3000));
    CHECK(simba::sys::boottime_ms() - t0 < 1000);
    CHECK(st.code == SIGKILL);
    w.stop();
  }

  TEST_CASE("stop() disarms") {
    Child c;
    c.spawn("/bin/sleep", {"sleep", "30"}, base_env(), current_mask());
    Watchdog w;
    int64_t t0 = simba::sys::boottime_ms();
    w.start();
    w.set_group(c.pgid());
    w.set_deadline(t0 + 100);
    pid_t wd = w.pid();
    w.stop();
    CHECK(w.pid() == -1);
    // stop() does not wait: the disarmed watchdog exits on its own at once
    CHECK(wait_until([&] { return !proc_tree::is_alive(wd); }, 2000));
    sleep_until(t0 + 300);
    ExitStatus st;
    CHECK_FALSE(c.reap(st));
    CHECK(c.running());
    kill_and_reap(c);
  }

  TEST_CASE("disarm() keeps it, idle, for the next CMD") {
    Child c;
    c.spawn("/bin/sleep", {"sleep", "30"}, base_env(), current_mask());
    Watchdog w;
    w.start();
    pid_t wd = w.pid();
    int64_t t0 = simba::sys::boottime_ms();
    w.set_group(c.pgid());
    w.set_deadline(t0 + 100);
    w.disarm();
    sleep_until(t0 + 300);
    ExitStatus st;
    CHECK_FALSE(c.reap(st)); // the disarmed timer fired and found no deadline
    CHECK(c.running());
    kill_and_reap(c, wd);

    // The same watchdog guards the next CMD.
    Child d;
    d.spawn("/bin/sleep", {"sleep", "30"}, base_env(), current_mask());
    t0 = simba::sys::boottime_ms();
    w.set_deadline(t0 + 100);
    w.set_group(d.pgid());
    CHECK(w.pid() == wd);
    CHECK(wait_until([&] { return d.reap(st); }, 3000));
    CHECK(simba::sys::boottime_ms() - t0 >= 99);
    CHECK(st.code == SIGKILL);
    w.stop();
  }

  TEST_CASE("after it fired, the next CMD's later deadline is armed too") {
    Watchdog w;
    w.start();
    ExitStatus st;
    for (int round = 0; round < 2; ++round) {
      // The deadline before the spawn, as the driver does: the watchdog may
      // still be killing round 0's tree (under load, for a while), and what
      // it kills is whatever runs below simba while round 0's deadline
      // stands; a new deadline ends that mandate.
      int64_t t0 = simba::sys::boottime_ms();
      w.set_deadline(t0 + 100 + 100 * round); // the second one is later
      Child c;
      c.spawn("/bin/sleep", {"sleep", "30"}, base_env(), current_mask());
      w.set_group(c.pgid());
      CHECK(wait_until([&] { return c.reap(st); }, 3000));
      CHECK(simba::sys::boottime_ms() - t0 >= 99 + 100 * round);
      CHECK(st.code == SIGKILL);
    }
    w.stop();
  }

  TEST_CASE("arming sets the shared timer: the watchdog is not woken and keeps three descriptors "
            "of its own") {
    int inherited = inheritable_fds();
    Watchdog w;
    w.start();
    pid_t wd = w.pid();
    // Settled: asleep in its poll with only the channel, the timer and its
    // SIGCHLD descriptor open, besides what CMD is to inherit.
    REQUIRE(wait_until([&] { return open_fds(wd) == inherited + 3 && state_of(wd) == 'S'; }, 2000));
    long switches = voluntary_switches(wd);
    REQUIRE(switches > 0);
    Child c;
    c.spawn("/bin/sleep", {"sleep", "30"}, base_env(), current_mask());
    int64_t t0 = simba::sys::boottime_ms();
    w.set_group(c.pgid());
    w.set_deadline(t0 + 300);
    w.set_deadline(t0 + 200); // earlier: the timer moves, still no wake-up
    usleep(100000);
    CHECK(voluntary_switches(wd) == switches); // it slept through both
    ExitStatus st;
    CHECK(wait_until([&] { return c.reap(st); }, 3000));
    CHECK(simba::sys::boottime_ms() - t0 >= 199);
    CHECK(st.code == SIGKILL);
    w.stop();
  }

  TEST_CASE("a timer that fires for a cleared deadline does not undo the next arming") {
    // Both sides set the timer: the watchdog, woken by a deadline that was
    // cleared meanwhile, disarms the timer while the supervisor arms it for
    // the next CMD. The hook widens the watchdog's window between reading
    // the deadline and setting the timer to 40 ms; the supervisor arms in
    // it. The watchdog reads the deadline again after its setting, so the
    // next CMD is still killed at its deadline.
    setenv("SIMBA_TEST_WATCHDOG_PAUSE_MS", "40", 1);
    Watchdog w;
    w.start();
    unsetenv("SIMBA_TEST_WATCHDOG_PAUSE_MS");
    Child c;
    c.spawn("/bin/sleep", {"sleep", "30"}, base_env(), current_mask());
    w.set_group(c.pgid());
    int64_t t0 = simba::sys::boottime_ms();
    w.set_deadline(t0 + 5);
    w.disarm();               // the timer still fires at t0 + 5, finds nothing,
    sleep_until(t0 + 20);     // and pauses before disarming the timer
    w.set_deadline(t0 + 100); // armed here, disarmed by it at about t0 + 45
    ExitStatus st;
    CHECK(wait_until([&] { return c.reap(st); }, 2000));
    CHECK(simba::sys::boottime_ms() - t0 >= 99);
    CHECK(st.code == SIGKILL);
    if (c.running()) kill_and_reap(c, w.pid());
    w.stop();
  }

  TEST_CASE("a watchdog killed by someone is replaced at the next deadline") {
    Watchdog w;
    w.start();
    pid_t old = w.pid();
    REQUIRE(kill(old, SIGKILL) == 0);
    REQUIRE(waitpid(old, nullptr, 0) == old);
    Child c;
    c.spawn("/bin/sleep", {"sleep", "30"}, base_env(), current_mask());
    int64_t t0 = simba::sys::boottime_ms();
    w.set_group(c.pgid());
    w.set_deadline(t0 + 100);
    CHECK(w.pid() != old);
    CHECK(w.pid() > 0);
    ExitStatus st;
    CHECK(wait_until([&] { return c.reap(st); }, 3000));
    CHECK(st.code == SIGKILL);

    // Killed while armed: a renewal (a later deadline, no wake-up) finds out.
    Child d;
    d.spawn("/bin/sleep", {"sleep", "30"}, base_env(), current_mask());
    t0 = simba::sys::boottime_ms();
    w.set_deadline(t0 + 20000);
    w.set_group(d.pgid());
    pid_t second = w.pid();
    REQUIRE(kill(second, SIGKILL) == 0);
    REQUIRE(waitpid(second, nullptr, 0) == second);
    w.set_deadline(t0 + 30000);
    CHECK(w.pid() != second);
    w.set_deadline(t0 + 100); // earlier: the new one must have CMD's group
    CHECK(wait_until([&] { return d.reap(st); }, 3000));
    CHECK(st.code == SIGKILL);
    w.stop();
  }

  TEST_CASE("after leave() the watchdog ends with the supervisor, not before") {
    prctl(PR_SET_CHILD_SUBREAPER, 1); // the watchdog comes to us when the sub-supervisor exits
    int report[2], go[2];
    REQUIRE(pipe(report) == 0);
    REQUIRE(pipe(go) == 0);
    pid_t sub = fork();
    REQUIRE(sub >= 0);
    if (sub == 0) {
      close(report[0]);
      close(go[1]);
      pid_t wd = -1;
      {
        Watchdog w;
        w.start();
        w.set_deadline(simba::sys::boottime_ms() + 30000);
        wd = w.pid();
        w.leave();
      } // destroyed: the channel stays open
      ssize_t ignored = write(report[1], &wd, sizeof wd);
      (void)ignored;
      char c;
      ignored = read(go[0], &c, 1); // wait for the parent's look
      _exit(0);
    }
    close(report[1]);
    close(go[0]);
    pid_t wd = -1;
    REQUIRE(read(report[0], &wd, sizeof wd) == ssize_t(sizeof wd));
    close(report[0]);
    usleep(100000);
    CHECK(proc_tree::is_alive(wd)); // outlives its Watchdog object
    close(go[1]);                   // the sub-supervisor exits
    REQUIRE(waitpid(sub, nullptr, 0) == sub);
    CHECK(wait_until(
        [&] {
          while (waitpid(-1, nullptr, WNOHANG) > 0) {
          }
          return !proc_tree::is_alive(wd);
        },
        2000));
  }

  TEST_CASE("signal_all can spare the watchdog") {
    Child c;
    c.spawn("/bin/sleep", {"sleep", "30"}, base_env(), current_mask());
    Watchdog w;
    w.start();
    w.set_group(c.pgid());
    w.set_deadline(simba::sys::boottime_ms() + 20000);
    kill_and_reap(c, w.pid());
    CHECK(proc_tree::is_alive(w.pid()));
    w.stop();
    CHECK(wait_until([&] { return !c.descendants_alive(); }, 2000));
  }

  TEST_CASE("the supervisor's death kills CMD's group at once") {
    // Orphans of the sub-supervisor come to us, to be reaped here.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    int report[2];
    REQUIRE(pipe(report) == 0);
    pid_t sub = fork();
    REQUIRE(sub >= 0);
    if (sub == 0) {
      // The sub-supervisor: CMD plus a watchdog far in the future, then an
      // exit without any clean-up (as after kill -9).
      close(report[0]);
      int code = 1;
      try {
        Child c;
        c.spawn("/bin/sh", {"sh", "-c", "sleep 30 & exec sleep 30"}, base_env(), current_mask());
        Watchdog w;
        w.start();
        w.set_group(c.pgid());
        w.set_deadline(simba::sys::boottime_ms() + 30000);
        pid_t pgid = c.pgid();
        int64_t until = simba::sys::boottime_ms() + 3000;
        while (group_members(pgid) < 2 && simba::sys::boottime_ms() < until) usleep(2000);
        if (write(report[1], &pgid, sizeof pgid) == ssize_t(sizeof pgid)) code = 0;
        _exit(code); // inside the scope: no destructors, the channel closes unannounced
      } catch (...) {
      }
      _exit(code);
    }
    close(report[1]);
    pid_t pgid = -1;
    REQUIRE(read(report[0], &pgid, sizeof pgid) == ssize_t(sizeof pgid));
    close(report[0]);
    int st = 0;
    REQUIRE(waitpid(sub, &st, 0) == sub);
    CHECK(WIFEXITED(st));
    int64_t t0 = simba::sys::boottime_ms();
    CHECK(wait_until(
        [&] {
          while (waitpid(-1, nullptr, WNOHANG) > 0) {
          }
          return group_members(pgid) == 0;
        },
        2000));
    CHECK(simba::sys::boottime_ms() - t0 < 1000);
    // Collect the watchdog (re-parented to us) once it has exited.
    wait_until(
        [&] {
          while (waitpid(-1, nullptr, WNOHANG) > 0) {
          }
          return !proc_tree::any_descendant_alive(getpid());
        },
        2000);
  }
}

TEST_SUITE("process::Watchdog") {
  TEST_CASE("CMD started by the watchdog: its exit status comes relayed") {
    Watchdog w;
    Child c(&w);
    // Alive long enough for its parent to be read, loaded machine or not.
    c.spawn("/bin/sh", {"sh", "-c", "sleep 0.5; exit 3"}, base_env(), current_mask());
    CHECK(getppid_of(c.pid()) == w.pid());
    ExitStatus st;
    REQUIRE(wait_until([&] { return c.reap(st); }, 3000));
    CHECK_FALSE(st.signaled);
    CHECK(st.code == 3);
    c.spawn("/bin/sh", {"sh", "-c", "kill -TERM $$"}, base_env(), current_mask());
    REQUIRE(wait_until([&] { return c.reap(st); }, 3000));
    CHECK(st.signaled);
    CHECK(st.code == SIGTERM);
    CHECK(st.shell_code() == 128 + SIGTERM);
    w.stop();
  }

  TEST_CASE("CMD inherits our inheritable descriptors, not the close-on-exec ones") {
    int keep = open("/dev/null", O_RDONLY);
    std::string hidden = "/tmp/simba-hidden-" + std::to_string(getpid());
    int hide = open(hidden.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(keep >= 0);
    REQUIRE(hide >= 0);
    Watchdog w;
    Child c(&w);
    std::string script = "test -e /proc/self/fd/" + std::to_string(keep) +
                         " && ! test -e /proc/self/fd/" + std::to_string(hide);
    c.spawn("/bin/sh", {"sh", "-c", script}, base_env(), current_mask());
    ExitStatus st;
    REQUIRE(wait_until([&] { return c.reap(st); }, 3000));
    CHECK(st.shell_code() == 0);
    // Nor does the watchdog hold the close-on-exec one.
    CHECK_FALSE(holds_file(w.pid(), hidden));
    w.stop();
    close(keep);
    close(hide);
    unlink(hidden.c_str());
  }

  TEST_CASE("the supervisor's death kills a daemon CMD started (setsid, double fork)") {
    prctl(PR_SET_CHILD_SUBREAPER, 1); // what is left comes to us, to be reaped
    std::string pidfile = "/tmp/simba-daemon-" + std::to_string(getpid());
    unlink(pidfile.c_str());
    pid_t sub = fork();
    REQUIRE(sub >= 0);
    if (sub == 0) {
      // The sub-supervisor: CMD starts the daemon and waits; then an exit
      // without any clean-up (as after kill -9).
      try {
        Watchdog w;
        Child c(&w);
        w.set_deadline(simba::sys::boottime_ms() + 30000);
        c.spawn("/bin/sh",
                {"sh", "-c",
                 "( setsid sh -c 'echo $$ >\"$0.tmp\"; mv \"$0.tmp\" \"$0\"; exec sleep 300' "
                 "\"$0\" & ); exec sleep 300",
                 pidfile},
                base_env(), current_mask());
        w.set_group(c.pgid());
        int64_t until = simba::sys::boottime_ms() + 3000;
        while (access(pidfile.c_str(), F_OK) != 0 && simba::sys::boottime_ms() < until)
          usleep(2000);
        _exit(0);
      } catch (...) {
      }
      _exit(1);
    }
    int st = 0;
    REQUIRE(waitpid(sub, &st, 0) == sub);
    REQUIRE(WIFEXITED(st));
    REQUIRE(WEXITSTATUS(st) == 0);
    pid_t daemon = 0;
    {
      std::ifstream in(pidfile);
      in >> daemon;
    }
    unlink(pidfile.c_str());
    REQUIRE(daemon > 0);
    CHECK(wait_until(
        [&] {
          while (waitpid(-1, nullptr, WNOHANG) > 0) {
          }
          return !proc_tree::is_alive(daemon);
        },
        1000));
    if (proc_tree::is_alive(daemon)) kill(daemon, SIGKILL);
    wait_until(
        [&] {
          while (waitpid(-1, nullptr, WNOHANG) > 0) {
          }
          return !proc_tree::any_descendant_alive(getpid());
        },
        2000);
  }
}
