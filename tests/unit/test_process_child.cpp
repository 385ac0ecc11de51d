#include "core/error.hpp"
#include "process/child.hpp"
#include "process/proc_tree.hpp"
#include "process/signals.hpp"
#include "process/watchdog.hpp"
#include "process_support.hpp"
#include "sys/clock.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace simba;
using namespace simba::process;
using namespace simba::test;

namespace {

// Reaps until CMD exits or `ms` pass.
bool wait_exit(Child& c, ExitStatus& st, int ms) {
  int64_t until = simba::sys::boottime_ms() + ms;
  while (simba::sys::boottime_ms() < until) {
    if (c.reap(st)) return true;
    usleep(2000);
  }
  return c.reap(st);
}

ExitStatus run(const std::string& script, std::vector<std::string> env = base_env()) {
  Child c;
  c.spawn(resolve_command("sh"), {"sh", "-c", script}, env, current_mask());
  ExitStatus st;
  REQUIRE(wait_exit(c, st, 5000));
  return st;
}

std::string temp_path(const char* tag) {
  return "/tmp/simba-test-" + std::string(tag) + "-" + std::to_string(getpid());
}

} // namespace

TEST_SUITE("process::Child") {
  TEST_CASE("exit code") {
    ExitStatus st = run("exit 3");
    CHECK_FALSE(st.signaled);
    CHECK(st.code == 3);
    CHECK(st.shell_code() == 3);
  }

  TEST_CASE("killed by a signal") {
    ExitStatus st = run("kill -TERM $$");
    CHECK(st.signaled);
    CHECK(st.code == SIGTERM);
    CHECK(st.shell_code() == 143);
  }

  TEST_CASE("runs in its own process group") {
    Child c;
    c.spawn(resolve_command("sleep"), {"sleep", "30"}, base_env(), current_mask());
    CHECK(c.running());
    CHECK(getpgid(c.pid()) == c.pid());
    CHECK(c.pgid() == c.pid());
    c.signal_group(SIGKILL);
    ExitStatus st;
    REQUIRE(wait_exit(c, st, 3000));
    CHECK(st.signaled);
    CHECK(st.code == SIGKILL);
    CHECK_FALSE(c.running());
  }

  TEST_CASE("resolve_command") {
    CHECK(resolve_command("sh").find("/sh") != std::string::npos);
    CHECK(resolve_command("/bin/sh") == "/bin/sh");

    try {
      resolve_command("simba-no-such-command-xyz");
      FAIL("resolved");
    } catch (const Error& e) {
      CHECK(e.code() == 127);
      CHECK(std::string(e.what()) == "command not found: simba-no-such-command-xyz");
    }
    try {
      resolve_command("/nonexistent/dir/cmd");
      FAIL("resolved");
    } catch (const Error& e) {
      CHECK(e.code() == 127);
    }

    std::string file = temp_path("noexec");
    { std::ofstream(file) << "#!/bin/sh\nexit 0\n"; }
    chmod(file.c_str(), 0644);
    try {
      resolve_command(file);
      FAIL("resolved");
    } catch (const Error& e) {
      CHECK(e.code() == 126);
      CHECK(std::string(e.what()) == file + ": Permission denied");
    }

    try {
      resolve_command("/tmp");
      FAIL("resolved");
    } catch (const Error& e) {
      CHECK(e.code() == 126);
      CHECK(std::string(e.what()) == "/tmp: is a directory");
    }

    // PATH search: a non-executable hit is remembered (126) unless a later
    // entry has an executable one; an empty entry is the current directory.
    const char* old_path = std::getenv("PATH");
    std::string saved = old_path ? old_path : "";
    std::string base = file.substr(file.rfind('/') + 1);
    setenv("PATH", "/tmp", 1);
    try {
      resolve_command(base);
      FAIL("resolved");
    } catch (const Error& e) {
      CHECK(e.code() == 126);
    }
    chmod(file.c_str(), 0755);
    CHECK(resolve_command(base) == file);
    char cwd[4096];
    REQUIRE(getcwd(cwd, sizeof cwd));
    REQUIRE(chdir("/tmp") == 0);
    setenv("PATH", ":/nonexistent", 1);
    CHECK(resolve_command(base) == "./" + base);
    REQUIRE(chdir(cwd) == 0);
    setenv("PATH", saved.c_str(), 1);
    unlink(file.c_str());
  }

  TEST_CASE("exec failure throws 126/127") {
    Child c;
    try {
      c.spawn("/nonexistent/simba-cmd", {"x"}, base_env(), current_mask());
      FAIL("spawned");
    } catch (const Error& e) {
      CHECK(e.code() == 127);
      CHECK(std::string(e.what()).find("cannot execute /nonexistent/simba-cmd: ") == 0);
    }
    std::string file = temp_path("noexec2");
    { std::ofstream(file) << "exit 0\n"; }
    chmod(file.c_str(), 0644);
    try {
      c.spawn(file, {"x"}, base_env(), current_mask());
      FAIL("spawned");
    } catch (const Error& e) {
      CHECK(e.code() == 126);
    }
    unlink(file.c_str());
    CHECK_FALSE(c.running());
    CHECK_FALSE(c.descendants_alive()); // the failed children were reaped
  }

  TEST_CASE("the environment given is the child's whole environment") {
    CHECK(
        run("test \"$SIMBA_X\" = 'a b' && test -z \"$HOME\"", {"PATH=/usr/bin:/bin", "SIMBA_X=a b"})
            .code == 0);
    CHECK(run("test -n \"$SIMBA_X\"", {"PATH=/usr/bin:/bin"}).code == 1);
  }

  TEST_CASE("argv is passed as is") {
    CHECK(run("test \"$#\" = 0").code == 0);
    Child c;
    c.spawn(resolve_command("sh"),
            {"sh", "-c", "test \"$1\" = 'x y' && test \"$2\" = ''", "zero", "x y", ""}, base_env(),
            current_mask());
    ExitStatus st;
    REQUIRE(wait_exit(c, st, 5000));
    CHECK(st.code == 0);
  }

  TEST_CASE("SIGPIPE is default and the mask restored in the child") {
    SignalChannel ch; // ignores SIGPIPE and blocks INT, TERM, ... here
    std::string out = temp_path("status");
    ExitStatus st;
    {
      Child c;
      c.spawn(resolve_command("sh"), {"sh", "-c", "exec cat /proc/self/status > \"$OUT\""},
              {"PATH=/usr/bin:/bin", "OUT=" + out}, ch.original_mask());
      REQUIRE(wait_exit(c, st, 5000));
    }
    CHECK(st.code == 0);
    std::ifstream in(out);
    std::string line;
    unsigned long long ign = ~0ULL, blk = ~0ULL;
    while (std::getline(in, line)) {
      if (line.rfind("SigIgn:", 0) == 0) ign = std::stoull(line.substr(7), nullptr, 16);
      if (line.rfind("SigBlk:", 0) == 0) blk = std::stoull(line.substr(7), nullptr, 16);
    }
    unlink(out.c_str());
    REQUIRE(ign != ~0ULL);
    CHECK((ign & (1ULL << (SIGPIPE - 1))) == 0);
    for (int s : {SIGINT, SIGTERM, SIGCHLD, SIGTTOU}) CHECK((blk & (1ULL << (s - 1))) == 0);
    // Still ignored in simba itself.
    struct sigaction sa;
    sigaction(SIGPIPE, nullptr, &sa);
    CHECK(bool(sa.sa_handler == SIG_IGN));
  }

  TEST_CASE("signal_all reaches descendants that left CMD's group") {
    Child c;
    c.spawn(resolve_command("sh"), {"sh", "-c", "setsid sleep 30 & exec sleep 30"}, base_env(),
            current_mask());
    pid_t pgid = c.pgid();
    // Wait for the setsid'd grandchild: a descendant in another group.
    auto escaped = [&] {
      for (const auto& p : proc_tree::descendants(getpid()))
        if (p.pgrp != pgid && p.state != 'Z' && p.pid != c.pid()) {
          // setsid has run once it leads its own group.
          if (p.pgrp == p.pid) return true;
        }
      return false;
    };
    REQUIRE(wait_until(escaped, 3000));

    // The group alone does not reach it; as subreaper we still see it.
    c.signal_group(SIGKILL);
    ExitStatus st;
    REQUIRE(wait_exit(c, st, 3000));
    CHECK(st.signaled);
    CHECK(c.descendants_alive());

    c.signal_all(SIGKILL);
    CHECK(wait_until(
        [&] {
          c.reap(st);
          return !c.descendants_alive();
        },
        3000));
  }

  TEST_CASE("signal_all spares the given process, not what runs below it") {
    Child c;
    c.spawn(resolve_command("sleep"), {"sleep", "30"}, base_env(), current_mask());
    pid_t spare = fork();
    REQUIRE(spare >= 0);
    if (spare == 0) {
      // A grandchild under the spare (the watchdog: CMD runs below it) is not.
      if (fork() == 0) {
        pause();
        _exit(0);
      }
      pause();
      _exit(0);
    }
    REQUIRE(wait_until([&] { return proc_tree::descendants(spare).size() == 1; }, 3000));
    pid_t spare_child = proc_tree::descendants(spare)[0].pid;

    c.signal_all(SIGKILL, spare);
    ExitStatus st;
    REQUIRE(wait_exit(c, st, 3000));
    CHECK(st.code == SIGKILL);
    CHECK(proc_tree::is_alive(spare));
    CHECK(wait_until([&] { return !proc_tree::is_alive(spare_child); }, 3000));
    CHECK_FALSE(c.descendants_alive(spare));
    CHECK(c.descendants_alive());

    // Clean up.
    c.signal_all(SIGKILL);
    CHECK(wait_until(
        [&] {
          c.reap(st);
          return !c.descendants_alive();
        },
        3000));
  }
}

namespace {
bool foreground_of_terminal() { return isatty(0) && tcgetpgrp(0) == getpgrp(); }
} // namespace

TEST_SUITE("process::Child") {
  // Skipped (and counted so by doctest) unless run in the foreground of a
  // terminal: ctest's unit/terminal runs both cases of this suite on a pty
  // of their own (tests/unit/on_terminal.py, --no-skip).
  TEST_CASE("on a terminal CMD is the foreground group until it exits" *
            doctest::skip(!foreground_of_terminal())) {
    for (bool by_watchdog : {false, true}) {
      CAPTURE(by_watchdog);
      Watchdog w;
      Child c(by_watchdog ? &w : nullptr);
      const char* script =
          "read -r _ _ _ _ pgrp _ _ tpgid _ < /proc/self/stat; test \"$pgrp\" = \"$tpgid\"";
      c.spawn("/bin/sh", {"sh", "-c", script}, base_env(), current_mask());
      ExitStatus st;
      REQUIRE(wait_exit(c, st, 5000));
      CHECK(st.code == 0);
      CHECK(tcgetpgrp(0) == getpgrp());
      w.stop();
    }
  }

  // Opt-in: this stops the test binary itself (as Ctrl-Z stops simba), which
  // an interactive shell would report as a stopped job (and script(1) would
  // stop for good with it). ctest's unit/terminal runs it, as:
  // SIMBA_TEST_JOB_CONTROL=1 python3 tests/unit/on_terminal.py simba_unit_tests -tc="*Ctrl-Z*"
  TEST_CASE("on a terminal, Ctrl-Z stops simba with CMD and resumes both" *
            doctest::skip(!std::getenv("SIMBA_TEST_JOB_CONTROL") || !foreground_of_terminal())) {
    // CMD as the watchdog's child: its stop comes relayed.
    Watchdog w;
    Child c(std::getenv("SIMBA_TEST_JOB_CONTROL_DIRECT") ? nullptr : &w);
    // CMD checks it owns the terminal, stops itself as Ctrl-Z would, and
    // checks again after being continued.
    const char* script = "own() { read -r _ _ _ _ pgrp _ _ tpgid _ < /proc/self/stat; test "
                         "\"$pgrp\" = \"$tpgid\"; }; "
                         "own || exit 1; kill -TSTP $$; own || exit 2; exit 7";
    c.spawn("/bin/sh", {"sh", "-c", script}, base_env(), current_mask());
    // Something has to continue us once CMD's stop has stopped us too.
    pid_t self = getpid();
    pid_t helper = fork();
    REQUIRE(helper >= 0);
    if (helper == 0) {
      usleep(300000);
      kill(self, SIGCONT);
      _exit(0);
    }
    int64_t t0 = simba::sys::boottime_ms();
    ExitStatus st;
    REQUIRE(wait_exit(c, st, 5000));
    CHECK(simba::sys::boottime_ms() - t0 >= 250); // we were stopped until the helper ran
    CHECK_FALSE(st.signaled);
    CHECK(st.code == 7);
    CHECK(tcgetpgrp(0) == getpgrp());
    waitpid(helper, nullptr, 0);
    w.stop();
  }
}

TEST_SUITE("process::Child") {
  TEST_CASE("a CMD that would start past its kill point does not start") {
    Child c;
    std::string marker = "/tmp/simba-toolate-" + std::to_string(getpid());
    unlink(marker.c_str());
    CHECK_THROWS_AS(c.spawn("/bin/sh", {"sh", "-c", "touch " + marker}, base_env(), current_mask(),
                            simba::sys::boottime_ms() - 1),
                    Child::TooLate);
    CHECK_FALSE(c.descendants_alive());
    CHECK(access(marker.c_str(), F_OK) != 0);
    // In time: it starts.
    c.spawn("/bin/sh", {"sh", "-c", "touch " + marker}, base_env(), current_mask(),
            simba::sys::boottime_ms() + 10000);
    ExitStatus st;
    for (int i = 0; i < 300 && !c.reap(st); ++i) usleep(10000);
    CHECK(st.code == 0);
    CHECK(access(marker.c_str(), F_OK) == 0);
    unlink(marker.c_str());
  }
}

TEST_SUITE("process::proc_tree") {
  TEST_CASE("a zombie's wait status is read from /proc until its parent reaps it") {
    for (int how : {0, 7, -SIGTERM}) {
      CAPTURE(how);
      pid_t pid = fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        // The signal's default action, not doctest's crash report (this
        // child is a copy of the test process), and not blocked.
        if (how < 0) {
          signal(-how, SIG_DFL);
          sigset_t none;
          sigemptyset(&none);
          sigprocmask(SIG_SETMASK, &none, nullptr);
          raise(-how);
        }
        _exit(how);
      }
      // Not reaped yet: a zombie, its status readable.
      siginfo_t info{};
      REQUIRE(waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == 0);
      int st = -1;
      REQUIRE(proc_tree::zombie_wait_status(pid, st));
      int expected = 0;
      REQUIRE(waitpid(pid, &expected, 0) == pid);
      CHECK(st == expected);
      CHECK((how < 0 ? WIFSIGNALED(st) && WTERMSIG(st) == -how
                     : WIFEXITED(st) && WEXITSTATUS(st) == how));
      // Reaped: gone.
      CHECK_FALSE(proc_tree::zombie_wait_status(pid, st));
    }
    // A living process is no zombie.
    int st = 0;
    CHECK_FALSE(proc_tree::zombie_wait_status(getpid(), st));
  }
}
