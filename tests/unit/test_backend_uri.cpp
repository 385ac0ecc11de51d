// Backend URIs (backend/uri.hpp): what each accepted form parses into, how a
// URI is named in messages (the password hidden), and the exact words of a
// refusal. The e2e test test_usage_errors and the Redis cases of
// tests/backend see the same rules through simba and open_backend().
#include "backend/uri.hpp"

#include "core/error.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <string>

using namespace simba::backend;

namespace {

// Sets (or with nullptr unsets) an environment variable for one scope.
class EnvVar {
public:
  EnvVar(const char* name, const char* value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~EnvVar() { m_old ? setenv(m_name, m_old->c_str(), 1) : unsetenv(m_name); }

private:
  const char* m_name;
  std::optional<std::string> m_old;
};

RedisUri redis_of(const std::string& uri) {
  BackendUri u = parse_backend_uri(uri);
  REQUIRE(std::holds_alternative<RedisUri>(u));
  return std::get<RedisUri>(u);
}

SqliteUri sqlite_of(const std::string& uri) {
  BackendUri u = parse_backend_uri(uri);
  REQUIRE(std::holds_alternative<SqliteUri>(u));
  return std::get<SqliteUri>(u);
}

std::string usage_error_of(const std::string& uri) {
  try {
    parse_backend_uri(uri);
  } catch (const simba::UsageError& e) {
    return e.what();
  }
  FAIL("no UsageError for " << uri);
  return "";
}

} // namespace

TEST_SUITE("backend::uri") {

  TEST_CASE("sqlite URIs name a file; the empty URI the default location") {
    CHECK(sqlite_of("sqlite:rel.db").path == "rel.db");
    CHECK(sqlite_of("sqlite:/abs/a.db").path == "/abs/a.db");
    CHECK(sqlite_of("SQLite:///abs/a.db").path == "/abs/a.db");
    CHECK_FALSE(sqlite_of("sqlite:rel.db").default_location);
    EnvVar home("SIMBA_HOME", "/srv/simba");
    SqliteUri d = sqlite_of("");
    CHECK(d.path == "/srv/simba/simba.db");
    CHECK(d.default_location);
  }

  TEST_CASE("a redis URI with every part") {
    EnvVar no_password(k_redis_password_env, nullptr);
    RedisUri r =
        redis_of("redis://u:p%40ss@[::1]:7000/3?prefix=x%26y:&timeout=1500ms&quarantine=off");
    CHECK_FALSE(r.unix_socket);
    CHECK(r.host == "::1");
    CHECK(r.port == 7000);
    CHECK(r.db == 3);
    CHECK(r.user == "u");
    CHECK(r.password == "p@ss");
    CHECK(r.prefix == "x&y:");
    CHECK(r.timeout_ms == 1500);
    CHECK_FALSE(r.quarantine);
    CHECK(redis_where(r) == "[::1]:7000");
    CHECK(redis_describe(r) == "redis://u@[::1]:7000/3?prefix=x%26y:&quarantine=off");
  }

  TEST_CASE("redis defaults, the password from the environment, Unix sockets") {
    EnvVar password(k_redis_password_env, "from-env");
    RedisUri r = redis_of("redis://cache.example");
    CHECK(r.host == "cache.example");
    CHECK(r.port == 6379);
    CHECK(r.db == 0);
    CHECK(r.prefix == "simba:");
    CHECK(r.timeout_ms == 2000);
    CHECK(r.quarantine);
    CHECK(r.password == "from-env");
    CHECK(redis_of("redis://:in-uri@h").password == "in-uri"); // the URI's wins
    CHECK(redis_describe(r) == "redis://cache.example:6379/0?prefix=simba:");

    RedisUri s = redis_of("redis+unix:/run/redis.sock?db=2");
    CHECK(s.unix_socket);
    CHECK(s.path == "/run/redis.sock");
    CHECK(s.db == 2);
    CHECK(redis_where(s) == "/run/redis.sock");
    CHECK(redis_describe(s) == "redis+unix:///run/redis.sock?db=2&prefix=simba:");
    CHECK(redis_of("redis+unix:///run/redis.sock").path == "/run/redis.sock");
  }

  TEST_CASE("rediss: TLS, its files, insecure only when named; none of it without TLS") {
    EnvVar no_password(k_redis_password_env, nullptr);
    RedisUri t = redis_of("rediss://cache.example/2?cacert=/etc/ca.pem&cert=c.pem&key=k%20.pem");
    CHECK(t.tls);
    CHECK(t.port == 6379);
    CHECK(t.db == 2);
    CHECK(t.tls_ca == "/etc/ca.pem");
    CHECK(t.tls_cert == "c.pem");
    CHECK(t.tls_key == "k .pem");
    CHECK_FALSE(t.tls_insecure);
    CHECK(redis_describe(t) == "rediss://cache.example:6379/2?prefix=simba:&cacert=/etc/ca.pem"
                               "&cert=c.pem&key=k%20.pem");
    CHECK(redis_of("REDISS://h?insecure=1").tls_insecure);
    CHECK(redis_describe(redis_of("rediss://h?insecure=1")) ==
          "rediss://h:6379/0?prefix=simba:&insecure=1");
    CHECK_FALSE(redis_of("redis://h").tls);
    CHECK(usage_error_of("redis://h?cacert=/ca.pem") ==
          "invalid backend URI 'redis://h?cacert=/ca.pem': 'cacert' needs TLS: rediss://");
    CHECK(usage_error_of("redis+unix:///s.sock?insecure=1").find("needs TLS") != std::string::npos);
    CHECK(usage_error_of("rediss://h?cert=c.pem").find("needs both cert= and key=") !=
          std::string::npos);
    CHECK(usage_error_of("rediss://h?insecure=yes").find("insecure is 1 or 0") !=
          std::string::npos);
    CHECK(usage_error_of("rediss://h?insecure=1&cacert=a").find("would be ignored") !=
          std::string::npos);
  }

  TEST_CASE("messages hide the password") {
    CHECK(redact("redis://u:pw@h:1/0") == "redis://***@h:1/0");
    CHECK(redact("redis://admin:secret") == "redis://admin:***");
    CHECK(redact("redis://admin:secret/0") == "redis://admin:***/0");
    CHECK(redact("redis://h:6379/0") == "redis://h:6379/0");
    CHECK(redact("redis://[::1]:6379") == "redis://[::1]:6379");
    CHECK(redact("sqlite:rel.db") == "sqlite:rel.db");
    CHECK(usage_error_of("redis://u:pw@h:abc") ==
          "invalid backend URI 'redis://***@h:abc': the port must be a number (a password goes "
          "before '@host')");
    CHECK(usage_error_of("redis://admin:secret").find("secret") == std::string::npos);
  }

  TEST_CASE("postgres: simba's parameters are taken out, the rest goes to libpq; no password "
            "is shown") {
    auto u = std::get<PostgresUri>(parse_backend_uri(
        "postgresql://u:pw@h1:5432,h2/db?sslmode=require&schema=locks&prefix=ci_&timeout=3s"
        "&target_session_attrs=read-write&quarantine=off&listen=off&password=pw2"));
    CHECK(u.conninfo ==
          "postgresql://u:pw@h1:5432,h2/db?sslmode=require&target_session_attrs=read-write"
          "&password=pw2");
    CHECK(u.shown == "postgresql://***@h1:5432,h2/db?sslmode=require&target_session_attrs="
                     "read-write&password=***");
    CHECK(u.schema == "locks");
    CHECK(u.prefix == "ci_");
    CHECK(u.timeout_ms == 3000);
    CHECK_FALSE(u.quarantine);
    CHECK_FALSE(u.listen);
    auto d = std::get<PostgresUri>(parse_backend_uri("postgres://h/db"));
    CHECK(d.conninfo == "postgres://h/db");
    CHECK(d.schema == "public");
    CHECK(d.prefix == "simba_");
    CHECK(d.quarantine);
    CHECK(d.listen);
    CHECK(redact("postgres://h/db?sslmode=require&password=pw") ==
          "postgres://h/db?sslmode=require&password=***");
    CHECK(usage_error_of("postgres://h/db?password=pw&timeout=x").find("pw&") == std::string::npos);
  }

  TEST_CASE("refusals name the URI and say what is wrong") {
    EnvVar no_password(k_redis_password_env, nullptr);
    const std::string expected =
        "expected sqlite:PATH, sqlite:///ABSOLUTE/PATH, "
        "redis://HOST[:PORT][/DB], rediss://..., redis+unix:///PATH.sock, "
        "postgres://[USER@]HOST[:PORT]/DB, etcd://HOST[:PORT][,...] or "
        "mysql://USER@HOST[:PORT]/DB";
    CHECK(usage_error_of("oracle://db") == "unknown backend 'oracle' in 'oracle://db': " + expected);
    CHECK(usage_error_of("postgres:db") ==
          "invalid backend URI 'postgres:db': expected postgres://[USER@]HOST[:PORT]/DB");
    CHECK(usage_error_of("postgres://h/db?prefix=a-b") ==
          "invalid backend URI 'postgres://h/db?prefix=a-b': the prefix may hold only letters, "
          "digits and '_' (at most 40)");
    CHECK(usage_error_of("no-scheme") == "invalid backend URI 'no-scheme': " + expected);
    CHECK(usage_error_of("sqlite://host/a.db") ==
          "invalid backend URI 'sqlite://host/a.db': a sqlite URI names a local file, not a host "
          "(sqlite:///ABSOLUTE/PATH)");
    CHECK(usage_error_of("sqlite:dir/") ==
          "invalid backend URI 'sqlite:dir/': the path names a directory, not a file");
    CHECK(usage_error_of("redis://h/1?db=2") ==
          "invalid backend URI 'redis://h/1?db=2': two different databases");
    CHECK(usage_error_of("redis://user@h") ==
          "invalid backend URI 'redis://***@h': a user name needs a password (give it in "
          "SIMBA_REDIS_PASSWORD)");
  }

  TEST_CASE("redis+sentinel: the sentinels in order, the master's name, the database") {
    EnvVar password(k_redis_password_env, "pw");
    RedisUri r = redis_of("redis+sentinel://app@s1,s2:26380,[::1]:7/my%20master/3?timeout=1s");
    REQUIRE(r.sentinel.nodes.size() == 3);
    CHECK(r.sentinel.nodes[0].host == "s1");
    CHECK(r.sentinel.nodes[0].port == 26379);
    CHECK(r.sentinel.nodes[1].port == 26380);
    CHECK(r.sentinel.nodes[2].host == "::1");
    CHECK(r.sentinel.master == "my master");
    CHECK(r.db == 3);
    CHECK(r.user == "app");
    CHECK(r.password == "pw");
    CHECK(r.timeout_ms == 1000);
    CHECK_FALSE(r.sentinel.tls);
    CHECK(redis_describe(r) ==
          "redis+sentinel://app@s1:26379,s2:26380,[::1]:7/my%20master/3?prefix=simba:");
    CHECK(redis_of("rediss+sentinel://s/m").sentinel.tls);
    // TLS to the sentinels and to the master, one set of TLS parameters.
    RedisUri t = redis_of("rediss+sentinel://s1,s2:7/m?cacert=/ca.pem&cert=/c.pem&key=/k.pem");
    CHECK(t.tls);
    CHECK(t.tls_ca == "/ca.pem");
    CHECK(t.tls_key == "/k.pem");
    CHECK(redis_describe(t) == "rediss+sentinel://s1:26379,s2:7/m/0?prefix=simba:&cacert=/ca.pem"
                               "&cert=/c.pem&key=/k.pem");
    CHECK_FALSE(redis_of("redis+sentinel://s/m").tls);
    CHECK(usage_error_of("redis+sentinel://s/m?insecure=1") ==
          "invalid backend URI 'redis+sentinel://s/m?insecure=1': 'insecure' needs TLS: rediss://");
    CHECK(redis_of("redis://h").sentinel.nodes.empty());
    const std::string form = "expected redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]";
    CHECK(usage_error_of("redis+sentinel://s1") ==
          "invalid backend URI 'redis+sentinel://s1': " + form);
    CHECK(usage_error_of("redis+sentinel://s1/") ==
          "invalid backend URI 'redis+sentinel://s1/': no master name: " + form);
    CHECK(usage_error_of("redis+sentinel://s1,,s2/m") ==
          "invalid backend URI 'redis+sentinel://s1,,s2/m': an empty host");
    // Each sentinel counts once toward the majority that names the master.
    CHECK(usage_error_of("redis+sentinel://s1,S1:26379,s2/m").find(
              "': the sentinel S1:26379 is listed twice (each sentinel counts once toward the "
              "majority)") != std::string::npos);
    CHECK(redis_of("redis+sentinel://s1,s1:26380/m").sentinel.nodes.size() == 2);
    CHECK(usage_error_of("redis+sentinel://admin:secret/m") ==
          "invalid backend URI 'redis+sentinel://admin:***/m': a sentinel's port must be a number "
          "(a password goes before '@host')");
    CHECK(usage_error_of("redis+sentinel://s1/m/x") ==
          "invalid backend URI 'redis+sentinel://s1/m/x': the database (the path) must be a "
          "number, got 'x'");
  }

  TEST_CASE("redis+cluster: the seeds in order, database 0 only, TLS to every node") {
    EnvVar password(k_redis_password_env, "pw");
    RedisUri r = redis_of("redis+cluster://app@n1:7000,n2,[::1]:7002?timeout=1s&prefix=p:");
    REQUIRE(r.cluster.seeds.size() == 3);
    CHECK(r.cluster.seeds[0].host == "n1");
    CHECK(r.cluster.seeds[0].port == 7000);
    CHECK(r.cluster.seeds[1].port == 6379);
    CHECK(r.cluster.seeds[2].host == "::1");
    CHECK(r.host == "n1"); // where it starts, for messages
    CHECK(r.db == 0);
    CHECK(r.user == "app");
    CHECK(r.password == "pw");
    CHECK(r.prefix == "p:");
    CHECK(r.sentinel.nodes.empty());
    CHECK_FALSE(r.tls);
    CHECK(redis_describe(r) == "redis+cluster://app@n1:7000,n2:6379,[::1]:7002/0?prefix=p:");
    CHECK(redis_of("redis+cluster://n1/0").cluster.seeds.size() == 1);
    RedisUri t = redis_of("rediss+cluster://n1,n2?cacert=/ca.pem");
    CHECK(t.tls);
    CHECK(redis_describe(t) == "rediss+cluster://n1:6379,n2:6379/0?prefix=simba:&cacert=/ca.pem");
    CHECK(redis_of("redis://h").cluster.seeds.empty());
    CHECK(usage_error_of("redis+cluster://n1/1") ==
          "invalid backend URI 'redis+cluster://n1/1': a Redis Cluster has database 0 only");
    CHECK(usage_error_of("redis+cluster://n1?db=2") ==
          "invalid backend URI 'redis+cluster://n1?db=2': a Redis Cluster has database 0 only");
    CHECK(usage_error_of("redis+cluster:n1") == "invalid backend URI 'redis+cluster:n1': expected "
                                                "redis+cluster://HOST[:PORT][,HOST[:PORT]...][/0]");
    CHECK(usage_error_of("redis+cluster://n1,,n2") ==
          "invalid backend URI 'redis+cluster://n1,,n2': an empty host");
    CHECK(usage_error_of("redis+cluster://admin:secret") ==
          "invalid backend URI 'redis+cluster://admin:***': a seed node's port must be a number "
          "(a password goes before '@host')");
    CHECK(usage_error_of("redis+cluster://n1?insecure=1") ==
          "invalid backend URI 'redis+cluster://n1?insecure=1': 'insecure' needs TLS: rediss://");
  }

} // TEST_SUITE
