// --once-per's window rule as each backend computes it, at every case of
// the one table of boundaries (tests/common/window_cases.hpp): SQLite
// decides with core::window_start; Redis with window_start of
// lua/common_once.lua, run here on the test server (EVAL of the very text
// simba embeds, with a `return` of our own after it); PostgreSQL with
// pg::window_start_sql, the expression its acquire_once statement uses,
// SELECTed on the test server. The three are kept alike by hand: this is
// what tells when one of them is not.
#include "support.hpp"

#include "../common/window_cases.hpp"
#include "backend/mysql/connection.hpp"
#include "backend/mysql/statements.hpp"
#include "backend/postgres/connection.hpp"
#include "backend/postgres/statements.hpp"
#include "backend/redis/lua_scripts.hpp"
#include "backend/uri.hpp"
#include "core/once_per.hpp"
#include "sys/clock.hpp"

#include <doctest/doctest.h>

#include <hiredis/hiredis.h>

#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace simba::test;
namespace backend = simba::backend;

namespace {

using WindowRule = std::function<int64_t(int64_t now, int64_t period, int64_t offset)>;

void check_table(const WindowRule& rule) {
  for (const WindowCase& c : k_window_cases) {
    std::string what = c.what;
    CAPTURE(what);
    CAPTURE(c.now);
    CAPTURE(c.period);
    CAPTURE(c.offset);
    CHECK(rule(c.now, c.period, c.offset) == c.start);
  }
}

// common_once.lua as the build embedded it (SIMBA_LUA_DIR: the sources;
// the text must be the one inside the *_once scripts simba sends).
std::string common_once_lua() {
  std::ifstream f(std::string(SIMBA_LUA_DIR) + "/common_once.lua");
  REQUIRE_MESSAGE(f, "cannot read " << SIMBA_LUA_DIR << "/common_once.lua");
  std::stringstream text;
  text << f.rdbuf();
  std::string s = text.str();
  REQUIRE(std::string(backend::redis::lua::k_acquire_once.text).find(s) != std::string::npos);
  return s;
}

struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};

WindowRule lua_rule(const backend::RedisUri& u) {
  std::string host = u.host;
  int port = u.port;
  if (!u.cluster.seeds.empty()) { // EVAL with no keys runs on any node
    host = u.cluster.seeds[0].host;
    port = u.cluster.seeds[0].port;
  }
  timeval tv{5, 0};
  auto ctx = std::shared_ptr<redisContext>(redisConnectWithTimeout(host.c_str(), port, tv),
                                           ContextFree{});
  REQUIRE((ctx && !ctx->err));
  redisSetTimeout(ctx.get(), tv);
  if (!u.password.empty()) {
    std::unique_ptr<redisReply, ReplyFree> a(static_cast<redisReply*>(
        u.user.empty() ? redisCommand(ctx.get(), "AUTH %s", u.password.c_str())
                       : redisCommand(ctx.get(), "AUTH %s %s", u.user.c_str(),
                                      u.password.c_str())));
    REQUIRE(a);
  }
  std::string script = common_once_lua() +
                       "\nreturn window_start(tonumber(ARGV[1]), tonumber(ARGV[2]), "
                       "tonumber(ARGV[3]))\n";
  return [ctx, script](int64_t now, int64_t period, int64_t offset) -> int64_t {
    std::string a = std::to_string(now), b = std::to_string(period), c = std::to_string(offset);
    const char* argv[] = {"EVAL", script.c_str(), "0", a.c_str(), b.c_str(), c.c_str()};
    size_t lens[] = {4, script.size(), 1, a.size(), b.size(), c.size()};
    std::unique_ptr<redisReply, ReplyFree> r(
        static_cast<redisReply*>(redisCommandArgv(ctx.get(), 6, argv, lens)));
    REQUIRE(r);
    REQUIRE_MESSAGE(r->type == REDIS_REPLY_INTEGER,
                    "EVAL: " << (r->str ? std::string(r->str, r->len) : "not an integer"));
    return r->integer;
  };
}

WindowRule sql_rule(const backend::PostgresUri& u) {
  auto conn = std::make_shared<backend::pg::Connection>();
  std::string err = conn->connect(u, simba::sys::boottime_ms() + 10000);
  REQUIRE_MESSAGE(err.empty(), err);
  std::string sql =
      "SELECT " + backend::pg::window_start_sql("$1::bigint", "$2::bigint", "$3::bigint");
  return [conn, sql](int64_t now, int64_t period, int64_t offset) -> int64_t {
    backend::pg::Result r =
        conn->query(sql, {std::to_string(now), std::to_string(period), std::to_string(offset)},
                    simba::sys::boottime_ms() + 10000);
    REQUIRE_MESSAGE(r.ok, sql << ": " << r.error);
    REQUIRE(r.rows.size() == 1);
    REQUIRE(r.rows[0].size() == 1);
    return std::stoll(r.rows[0][0]);
  };
}

// MySQL's: the expression of backend/mysql/statements.cpp, on the server.
WindowRule mysql_rule(const backend::MysqlUri& u) {
  auto conn = std::make_shared<backend::mysql::Connection>();
  std::string err = conn->connect(u, simba::sys::boottime_ms() + 10000);
  REQUIRE_MESSAGE(err.empty(), err);
  return [conn](int64_t now, int64_t period, int64_t offset) -> int64_t {
    std::string sql = "SELECT " + backend::mysql::window_start_sql(std::to_string(now),
                                                                   std::to_string(period),
                                                                   std::to_string(offset));
    backend::mysql::Result r = conn->query(sql, simba::sys::boottime_ms() + 10000);
    REQUIRE_MESSAGE(r.ok, sql << ": " << r.error);
    REQUIRE(r.sets.size() == 1);
    REQUIRE(r.sets[0].rows.size() == 1);
    return std::stoll(r.sets[0].rows[0][0]);
  };
}

} // namespace

TEST_CASE("once-per windows: the backend's own rule gives every start of the boundary table") {
  backend::BackendUri uri = backend::parse_backend_uri(backend_uri());
  // SQLite and etcd judge windows with core's rule, in simba.
  if (std::holds_alternative<backend::SqliteUri>(uri) ||
      std::holds_alternative<backend::EtcdUri>(uri)) {
    check_table([](int64_t now, int64_t period, int64_t offset) {
      return simba::core::window_start(now, period, offset);
    });
  } else if (const auto* r = std::get_if<backend::RedisUri>(&uri)) {
    REQUIRE_MESSAGE(!r->unix_socket, "the test Redis is reached over TCP");
    check_table(lua_rule(*r));
  } else if (const auto* m = std::get_if<backend::MysqlUri>(&uri)) {
    check_table(mysql_rule(*m));
  } else {
    check_table(sql_rule(std::get<backend::PostgresUri>(uri)));
  }
}
