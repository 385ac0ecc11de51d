// systemd's notification protocol (cli/sd_notify.cpp) on a real Unix
// datagram socket that the test binds and reads: the variables taken from
// the environment, READY=1 once with the first STATUS, STATUS only when it
// changes, WATCHDOG=1 only while the backend answered within a lease's
// time, STOPPING=1.
#include "cli/sd_notify.hpp"
#include "core/names.hpp"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace simba;

namespace {

// systemd's side: a bound socket, and the datagrams it got so far.
struct Listener {
  std::string dir;
  int fd = -1;
  Listener() {
    char tmpl[] = "/tmp/simba-sd-notify.XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    dir = tmpl;
    fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::string path = dir + "/notify";
    memcpy(a.sun_path, path.c_str(), path.size() + 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    setenv("NOTIFY_SOCKET", path.c_str(), 1);
  }
  ~Listener() {
    ::close(fd);
    unlink((dir + "/notify").c_str());
    rmdir(dir.c_str());
  }
  std::vector<std::string> take() {
    std::vector<std::string> got;
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) got.emplace_back(buf, size_t(n));
    return got;
  }
};

core::ContenderConfig lead_config() {
  core::ContenderConfig c;
  c.mutex = "m";
  c.contender_id = core::make_owner_id("me", 1);
  c.ttl_ms = 10000;
  c.transition_ms = 2000;
  c.call_timeout_ms = 2000;
  c.mode = core::ContenderConfig::Mode::lead;
  return c;
}

core::CallResult answer(const std::string& owner, uint64_t token) {
  core::CallResult r;
  r.status = core::CallResult::Status::ok;
  r.observed.now = 1'700'000'010'000;
  r.observed.lease.owner_id = owner;
  r.observed.lease.fencing_token = token;
  r.observed.lease.acquired_at = 1'700'000'000'000;
  r.observed.lease.ttl_at = r.observed.now + 10000;
  r.observed.lease.transition_at = r.observed.now + 12000;
  return r;
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

} // namespace

TEST_SUITE("cli::sd_notify") {
  TEST_CASE("READY with the first status; STATUS on change; WATCHDOG while answered; STOPPING") {
    Listener l;
    setenv("WATCHDOG_USEC", "1000000", 1);
    unsetenv("WATCHDOG_PID");
    cli::SdNotify n = cli::SdNotify::from_environment();
    REQUIRE(n.enabled());
    CHECK(n.watchdog_every_ms() == 500);
    // CMD does not get them: simba speaks for the service.
    CHECK(!getenv("NOTIFY_SOCKET"));
    CHECK(!getenv("WATCHDOG_USEC"));
    core::ContenderConfig cfg = lead_config();
    cli::ServiceNotifier s(std::move(n), cfg);

    core::CallResult failed;
    failed.status = core::CallResult::Status::indeterminate;
    s.on_answer(100, core::Op::acquire, failed, false);
    CHECK(l.take().empty()); // no answer yet: not ready, no watchdog
    CHECK(!s.wake_at());

    core::CallResult busy = answer(core::make_owner_id("alpha", 7), 5);
    s.on_answer(200, core::Op::acquire, busy, false);
    std::vector<std::string> got = l.take();
    REQUIRE(got.size() == 2);
    CHECK(starts_with(got[0], "READY=1\nSTATUS=standby; leader is alpha since 20"));
    CHECK(got[1] == "WATCHDOG=1");
    s.on_answer(300, core::Op::acquire, busy, false);
    CHECK(l.take().empty()); // the same status; the next ping not due

    core::CallResult ours = answer(cfg.contender_id, 9);
    s.on_answer(400, core::Op::acquire, ours, true);
    got = l.take();
    REQUIRE(got.size() == 1);
    CHECK(starts_with(got[0], "STATUS=leader since 20"));
    CHECK(got[0].find(" (token 9)") != std::string::npos);

    REQUIRE(s.wake_at());
    CHECK(*s.wake_at() == 700);
    s.on_timer(700);
    CHECK(l.take() == std::vector<std::string>{"WATCHDOG=1"});
    // No answer for longer than ttl + transition + 1s + one call: silent.
    s.on_timer(400 + 15000);
    CHECK(l.take() == std::vector<std::string>{"WATCHDOG=1"});
    s.on_timer(400 + 15001 + 500);
    CHECK(l.take().empty());

    s.on_stop();
    CHECK(l.take() == std::vector<std::string>{"STOPPING=1"});
  }

  TEST_CASE("WATCHDOG_PID of another process: no watchdog; no NOTIFY_SOCKET: disabled") {
    {
      Listener l;
      setenv("WATCHDOG_USEC", "1000000", 1);
      setenv("WATCHDOG_PID", "1", 1);
      cli::SdNotify n = cli::SdNotify::from_environment();
      CHECK(n.enabled());
      CHECK(n.watchdog_every_ms() == 0);
      CHECK(!getenv("WATCHDOG_PID"));
    }
    unsetenv("NOTIFY_SOCKET");
    CHECK(!cli::SdNotify::from_environment().enabled());
  }
}
