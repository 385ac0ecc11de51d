#include "core/error.hpp"
#include "process/signals.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <string>

using namespace simba;
using namespace simba::process;

TEST_SUITE("process::signals") {
  TEST_CASE("parse_signal accepts names, SIG names, any case and numbers") {
    CHECK(parse_signal("TERM") == SIGTERM);
    CHECK(parse_signal("SIGTERM") == SIGTERM);
    CHECK(parse_signal("term") == SIGTERM);
    CHECK(parse_signal("sigterm") == SIGTERM);
    CHECK(parse_signal("15") == 15);
    CHECK(parse_signal("9") == SIGKILL);
    CHECK(parse_signal("KILL") == SIGKILL);
    CHECK(parse_signal("INT") == SIGINT);
    CHECK(parse_signal("HUP") == SIGHUP);
    CHECK(parse_signal("QUIT") == SIGQUIT);
    CHECK(parse_signal("USR1") == SIGUSR1);
    CHECK(parse_signal("SIGUSR2") == SIGUSR2);
  }

  TEST_CASE("parse_signal rejects everything else as a usage error") {
    for (const char* bad : {"", "0", "-15", "999", "TERMINATE", "SIG", "1.5", " TERM", "SIGFOO"}) {
      CAPTURE(bad);
      try {
        parse_signal(bad);
        FAIL("accepted");
      } catch (const UsageError& e) {
        CHECK(e.code() == exit_code::k_usage);
        CHECK(std::string(e.what()) == "unknown signal '" + std::string(bad) + "'");
      }
    }
  }

  TEST_CASE("signal_name") {
    CHECK(signal_name(SIGTERM) == "SIGTERM");
    CHECK(signal_name(SIGKILL) == "SIGKILL");
    CHECK(signal_name(SIGINT) == "SIGINT");
    CHECK(signal_name(SIGCHLD) == "SIGCHLD");
  }

  TEST_CASE("forwarded signals") {
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH})
      CHECK(SignalChannel::is_forwarded(s));
    for (int s : {SIGCHLD, SIGCONT, SIGKILL, SIGPIPE, SIGTTOU})
      CHECK_FALSE(SignalChannel::is_forwarded(s));
  }

  TEST_CASE("SignalChannel blocks, reads from its fd and restores the mask") {
    sigset_t before;
    sigprocmask(SIG_BLOCK, nullptr, &before);
    REQUIRE_FALSE(sigismember(&before, SIGUSR1));
    {
      SignalChannel ch;
      REQUIRE(ch.fd() >= 0);
      sigset_t now;
      sigprocmask(SIG_BLOCK, nullptr, &now);
      for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCHLD, SIGCONT,
                    SIGTTOU, SIGTTIN})
        CHECK(sigismember(&now, s));
      CHECK_FALSE(sigismember(&ch.original_mask(), SIGUSR1));

      struct sigaction sa;
      sigaction(SIGPIPE, nullptr, &sa);
      CHECK(bool(sa.sa_handler == SIG_IGN));

      CHECK(ch.read_pending().empty());
      raise(SIGUSR1);
      raise(SIGUSR2);
      std::vector<int> got = ch.read_pending();
      REQUIRE(got.size() == 2);
      CHECK(got[0] == SIGUSR1);
      CHECK(got[1] == SIGUSR2);
      CHECK(ch.read_pending().empty());
    }
    sigset_t after;
    sigprocmask(SIG_BLOCK, nullptr, &after);
    CHECK_FALSE(sigismember(&after, SIGUSR1));
    CHECK_FALSE(sigismember(&after, SIGTERM));
  }
}
