#pragma once
// Backend URIs (DESIGN §5): every scheme open_backend() accepts is parsed
// here, in one place, into a plain struct of its own; the factory
// (backend.cpp) then hands that struct to its backend. A malformed URI is a
// UsageError (exit 64) naming the URI with its password hidden (redact()).
// A new scheme is one more struct and one more case in uri.cpp.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace simba::backend {

// sqlite:PATH, sqlite:/ABS/PATH, sqlite:///ABS/PATH; "" is the default file.
struct SqliteUri {
  std::string path;
  bool default_location = false; // the URI was empty: the one place simba creates
};

// redis+sentinel://[[user]:password@]HOST[:PORT][,HOST[:PORT]...]/MASTER[/db][?...]: the
// sentinels (port 26379 by default), asked in this order for the master
// named MASTER (redis/sentinel.hpp); user and password are the master's.
// rediss+sentinel:// speaks TLS to the sentinels and to the master (tls
// here and RedisUri::tls, one set of ?cacert= ?cert= ?key= ?insecure=); the
// master's certificate must name the address a sentinel gives (docs/backends/redis.md, "Redis Sentinel").
struct RedisSentinels {
  struct Node {
    std::string host;
    int port = 26379;
  };
  std::vector<Node> nodes; // empty: not Sentinel
  std::string master;      // the name the sentinels know the master by
  bool tls = false;
};

// redis+cluster://[[user]:password@]HOST[:PORT][,HOST[:PORT]...][/0][?...]: a
// Redis Cluster reached through these seed nodes (port 6379 by default),
// asked in this order for the slot map (redis/cluster_route.hpp); a
// cluster has database 0 only. rediss+cluster:// speaks TLS to every node.
struct RedisCluster {
  std::vector<RedisSentinels::Node> seeds; // empty: not a cluster
};

// redis://[[user]:password@]host[:port][/db][?prefix=...&timeout=...&db=...&quarantine=...]
// redis+unix://[[user]:password@]/path.sock[?db=N&...] (also redis+unix:/path.sock)
// rediss://... the same over TLS, plus ?cacert=FILE, ?cert=FILE&key=FILE, ?insecure=1
// The password may come from SIMBA_REDIS_PASSWORD instead (when the URI has none).
struct RedisUri {
  bool unix_socket = false;
  std::string host = "127.0.0.1"; // TCP
  int port = 6379;
  std::string path; // Unix socket
  std::string user;
  std::string password; // never printed
  long db = 0;
  std::string prefix = "simba:";
  int64_t timeout_ms = 2000;
  // No new lease after the server may have lost a running one (a restart,
  // a failover, a flush: redis/lua/common.lua, quarantine_end). Off only for
  // a server that cannot lose data, or for tests that restart their own.
  bool quarantine = true;
  // rediss:// (net/tls.hpp): the server verified against tls_ca ("": the
  // system's store) unless tls_insecure; a client certificate when given.
  bool tls = false;
  std::string tls_ca, tls_cert, tls_key;
  bool tls_insecure = false;
  // Sentinel: host and port are the master's, found by asking them.
  RedisSentinels sentinel;
  // Cluster: host and port are those of the node a call goes to.
  RedisCluster cluster;
};

// The environment variable a Redis password may come from.
constexpr const char* k_redis_password_env = "SIMBA_REDIS_PASSWORD";

// postgres://[user[:password]@][host[:port][,...]][/dbname][?param=value&...]
// (also postgresql://): read as libpq reads it, with libpq's keywords (host
// lists, a Unix socket directory as host=, sslmode, target_session_attrs...)
// and its environment (PGPASSWORD, ~/.pgpass...: postgres/conninfo.hpp).
// simba's own parameters are taken out first:
// schema, prefix (of the table names), timeout, quarantine, listen.
struct PostgresUri {
  std::string conninfo; // for the connection (conninfo.hpp); may hold a password: never printed
  std::string shown;    // the same without any password (describe())
  std::string schema = "public";
  std::string prefix = "simba_";
  int64_t timeout_ms = 2000;
  bool quarantine = true; // as RedisUri's (postgres/statements.cpp)
  // LISTEN for releases (postgres/wakeups.hpp); off through a pooler in
  // transaction mode, where it cannot work.
  bool listen = true;
  // The URI's secrets as written and decoded, to hide in any message that
  // might echo a part of a malformed URI.
  std::vector<std::string> secrets;
};

// etcd://HOST[:PORT][,HOST[:PORT]...][/PREFIX][?timeout=...&user=...]
// (port 2379 by default), the members asked in this order; etcds:// the
// same over TLS, plus ?cacert=FILE, ?cert=FILE&key=FILE. The password of
// ?user= comes from SIMBA_ETCD_PASSWORD only (etcd/etcd.hpp).
struct EtcdUri {
  struct Node {
    std::string host;
    int port = 2379;
  };
  std::vector<Node> endpoints;
  std::string prefix = "simba/"; // every key's; ends with '/'
  int64_t timeout_ms = 2000;
  std::string user;
  std::string password; // never printed
  bool tls = false;
  std::string tls_ca, tls_cert, tls_key;
};

// The environment variable the password of an etcd user comes from.
constexpr const char* k_etcd_password_env = "SIMBA_ETCD_PASSWORD";

// The URI as simba names the backend: canonical, never a password.
std::string etcd_describe(const EtcdUri& u);

// mysql://user[:password]@host[:port]/database[?param=value&...] (also
// mariadb://): simba's own client (mysql/README.md). Parameters: socket
// (a Unix socket's path instead of TCP), tls
// (disable|prefer|require|verify-ca|verify-full), cacert, timeout, prefix
// (of the table names), quarantine (on|off). The password may come from SIMBA_MYSQL_PASSWORD
// instead (when the URI has none).
struct MysqlUri {
  enum class Tls { disable, prefer, require, verify_ca, verify_full };
  std::string host = "127.0.0.1";
  int port = 3306;
  std::string socket; // a Unix socket instead of host:port
  std::string user;
  std::string password; // never printed
  std::string database;
  Tls tls = Tls::prefer;
  std::string cacert; // "": the system's store (verify-ca, verify-full)
  int64_t timeout_ms = 2000;
  std::string prefix = "simba_";
  // No new lease after a server restart that may have lost a running one
  // (mysql/statements.cpp, quarantine_sql). Off only for a server that
  // cannot lose writes, or for tests that restart their own.
  bool quarantine = true;
  std::string shown; // the URI without its password (describe())
  // The URI's secrets as written and decoded, to hide in any message.
  std::vector<std::string> secrets;
  // ?option-file= ("": ~/.my.cnf), read only when the URI and the
  // environment give no password (mysql/option_file.hpp); what became of
  // it, for the error of a refused login ("" nothing to say).
  std::string option_file;
  std::string password_note;
};

// The environment variable a MySQL password may come from.
constexpr const char* k_mysql_password_env = "SIMBA_MYSQL_PASSWORD";

using BackendUri = std::variant<SqliteUri, RedisUri, PostgresUri, EtcdUri, MysqlUri>;

// Parses `uri` ("" names the default SQLite file: $SIMBA_HOME/simba.db, else
// ${XDG_STATE_HOME:-$HOME/.local/state}/simba/simba.db). Throws UsageError for
// an unknown scheme or a malformed URI, and when the default file has no home.
BackendUri parse_backend_uri(const std::string& uri);

// The URI with its user-info part ("user:password@") hidden, for messages.
std::string redact(const std::string& uri);

// For messages: "host:port" ("[v6]:port") or the socket's path.
std::string redis_where(const RedisUri& u);

// The URI as simba names the backend (Backend::describe()): canonical, and
// without the password.
std::string redis_describe(const RedisUri& u);

} // namespace simba::backend
