#pragma once
// A redis-server of a test's own (tests/backend/redis_*.cpp): started on a
// free loopback port with the options a case needs, killed at the end.
#include "support.hpp"

#include <doctest/doctest.h>

#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <memory>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace simba::test {

// A loopback port nobody listens on (just now).
inline int free_port() {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(s >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(s);
  return ntohs(a.sin_port);
}

inline std::string find_redis_server() {
  const char* path = std::getenv("PATH");
  std::string dirs = std::string(path ? path : "") + ":/usr/bin:/usr/local/bin:/usr/sbin";
  size_t pos = 0;
  while (pos <= dirs.size()) {
    size_t colon = dirs.find(':', pos);
    if (colon == std::string::npos) colon = dirs.size();
    std::string candidate = dirs.substr(pos, colon - pos) + "/redis-server";
    pos = colon + 1;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

// A redis-server of the test's own, without persistence, on a free loopback
// port (and a Unix socket in its own directory). Stopped (SIGKILL) at the
// end.
class OwnRedis {
public:
  // `sentinel_of`: a sentinel instead, watching the master 'mymaster' at
  // that loopback port (quorum 1).
  explicit OwnRedis(std::vector<std::string> extra = {}, int sentinel_of = 0)
      : m_extra(std::move(extra)), m_sentinel_of(sentinel_of) {
    m_bin = find_redis_server();
    REQUIRE_MESSAGE(!m_bin.empty(), "redis-server is not installed (scripts/test installs it)");
    char tmpl[] = "/tmp/simba-redis-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    m_dir = tmpl;
    for (int attempt = 0; attempt < 5; ++attempt) {
      m_port = free_port();
      if (start()) return;
    }
    FAIL("could not start " << m_bin);
  }
  ~OwnRedis() {
    kill_server();
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);
  }

  int port() const { return m_port; }
  std::string socket_path() const { return m_dir + "/redis.sock"; }
  std::string uri(const std::string& prefix = "t:") const {
    // quarantine=off: these tests acquire right after (re)starting their own
    // server; the quarantine has a test of its own.
    return "redis://127.0.0.1:" + std::to_string(m_port) + "/0?prefix=" + prefix +
           "&timeout=1s&quarantine=off";
  }

  // Kills the server (SIGKILL: nothing is saved anyway) and starts a fresh
  // one on the same port: every key is gone.
  void restart() {
    kill_server();
    REQUIRE_MESSAGE(start(), "could not restart redis-server on port " << m_port);
  }
  void kill_server() {
    if (m_pid <= 0) return;
    kill(m_pid, SIGCONT);
    kill(m_pid, SIGKILL);
    waitpid(m_pid, nullptr, 0);
    m_pid = -1;
  }
  // With the quarantine on (what users get): for the tests of data loss.
  std::string guarded_uri(const std::string& prefix, int db = 0) const {
    return "redis://127.0.0.1:" + std::to_string(m_port) + "/" + std::to_string(db) +
           "?prefix=" + prefix + "&timeout=1s";
  }
  std::string dir() const { return m_dir; }
  // SIGKILL, then a new server on the same port and directory: it loads
  // whatever persistence left there (dump.rdb, appendonlydir).
  void crash_and_restart() { restart(); }
  void pause() { REQUIRE(kill(m_pid, SIGSTOP) == 0); }
  void resume() { REQUIRE(kill(m_pid, SIGCONT) == 0); }

  // A command on a connection of the test's own.
  ReplyPtr command(const std::vector<std::string>& args) {
    timeval tv{2, 0};
    std::unique_ptr<redisContext, ContextFree> c(redisConnectWithTimeout("127.0.0.1", m_port, tv));
    REQUIRE((c && !c->err));
    redisSetTimeout(c.get(), tv);
    if (!m_password.empty()) {
      ReplyPtr a(static_cast<redisReply*>(redisCommand(c.get(), "AUTH %s", m_password.c_str())));
      REQUIRE(a);
    }
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (auto& a : args) {
      argv.push_back(a.c_str());
      lens.push_back(a.size());
    }
    ReplyPtr r(static_cast<redisReply*>(
        redisCommandArgv(c.get(), static_cast<int>(args.size()), argv.data(), lens.data())));
    REQUIRE(r);
    return r;
  }
  void set_password(const std::string& p) { m_password = p; }

private:
  bool start() {
    std::vector<std::string> args = {m_bin,
                                     "--port",
                                     std::to_string(m_port),
                                     "--bind",
                                     "127.0.0.1",
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--daemonize",
                                     "no",
                                     "--dir",
                                     m_dir,
                                     "--unixsocket",
                                     socket_path(),
                                     "--unixsocketperm",
                                     "700"};
    if (m_sentinel_of > 0) args = sentinel_args();
    args.insert(args.end(), m_extra.begin(), m_extra.end());
    std::fflush(nullptr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int null = open("/dev/null", O_RDWR);
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(m_bin.c_str(), argv.data());
      _exit(127);
    }
    m_pid = pid;
    // Ready when it answers a PING (PONG, or NOAUTH when it wants a
    // password). LOADING (the dataset, from the RDB or AOF a restart
    // reads) is an answer but not ready: the tests' first call would get it.
    for (int64_t until = mono_ms() + 20000; mono_ms() < until; sleep_ms(20)) {
      int status;
      if (waitpid(m_pid, &status, WNOHANG) == m_pid) { // port taken?
        m_pid = -1;
        return false;
      }
      timeval tv{0, 200000};
      std::unique_ptr<redisContext, ContextFree> c(
          redisConnectWithTimeout("127.0.0.1", m_port, tv));
      if (!c || c->err) continue;
      redisSetTimeout(c.get(), tv);
      ReplyPtr r(static_cast<redisReply*>(redisCommand(c.get(), "PING")));
      if (r &&
          (r->type != REDIS_REPLY_ERROR || std::string(r->str, r->len).rfind("NOAUTH", 0) == 0))
        return true;
    }
    kill_server();
    return false;
  }

  std::string m_bin;
  std::string m_dir;
  // A sentinel reads (and rewrites) a file of its own.
  std::vector<std::string> sentinel_args() {
    std::string conf = m_dir + "/sentinel.conf";
    FILE* f = std::fopen(conf.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fprintf(f, "sentinel monitor mymaster 127.0.0.1 %d 1\n", m_sentinel_of);
    std::fclose(f);
    return {m_bin,   conf,  "--sentinel",  "--port", std::to_string(m_port), "--bind", "127.0.0.1",
            "--dir", m_dir, "--daemonize", "no"};
  }

  std::vector<std::string> m_extra;
  int m_sentinel_of = 0;
  std::string m_password;
  int m_port = 0;
  pid_t m_pid = -1;
};

} // namespace simba::test
