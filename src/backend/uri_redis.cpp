// Redis URIs: redis://, rediss://, redis+unix://, redis+sentinel://,
// rediss+sentinel://, redis+cluster:// and rediss+cluster:// into a RedisUri, and back into a
// description without the password (uri.hpp).
#include "backend/uri.hpp"
#include "backend/uri_parts.hpp"

#include "core/duration.hpp"

#include <strings.h>

#include <climits>
#include <cstdlib>
#include <string>

namespace simba::backend {
using namespace uri_parts;

namespace {

constexpr const char* k_sentinel_form =
    "expected redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]";
constexpr const char* k_cluster_form = "expected redis+cluster://HOST[:PORT][,HOST[:PORT]...][/0]";

// "user:password", ":password" or "user" (the password then comes from
// SIMBA_REDIS_PASSWORD).
void parse_userinfo(const std::string& info, RedisUri& e, const std::string& shown) {
  auto colon = info.find(':');
  e.user = percent_decode(info.substr(0, colon), shown);
  if (colon != std::string::npos) e.password = percent_decode(info.substr(colon + 1), shown);
}

// rediss:// only: the CA file, the client's certificate and key, insecure=1.
bool parse_tls_item(const std::string& name, const std::string& value, RedisUri& e,
                    const std::string& shown) {
  std::string* file = name == "cacert" ? &e.tls_ca
                      : name == "cert" ? &e.tls_cert
                      : name == "key"  ? &e.tls_key
                                       : nullptr;
  if (!file && name != "insecure") return false;
  if (!e.tls) bad_uri(shown, "'" + name + "' needs TLS: rediss://");
  if (file) {
    if (value.empty()) bad_uri(shown, "an empty " + name + " file");
    *file = value;
  } else {
    if (value != "1" && value != "0") bad_uri(shown, "insecure is 1 or 0");
    e.tls_insecure = value == "1";
  }
  return true;
}

void check_tls_items(const RedisUri& e, const std::string& shown) {
  if (e.tls_cert.empty() != e.tls_key.empty())
    bad_uri(shown, "a client certificate needs both cert= and key=");
  if (e.tls_insecure && !e.tls_ca.empty())
    bad_uri(shown, "insecure=1 verifies nothing: cacert= would be ignored");
}

void parse_query(const std::string& query, RedisUri& e, bool& db_given, const std::string& shown) {
  for_each_query_item(
      query, shown, [&](const std::string& name, const std::string& value, const std::string&) {
        if (name == "prefix") {
          // A brace would move the hash tag: the keys of one mutex must share a
          // cluster slot.
          if (value.find_first_of("{}") != std::string::npos)
            bad_uri(shown, "the prefix may not contain '{' or '}'");
          e.prefix = value;
        } else if (name == "timeout") {
          e.timeout_ms = core::parse_duration(value, "timeout in the backend URI");
          if (e.timeout_ms <= 0) bad_uri(shown, "the timeout must be positive");
        } else if (name == "db") {
          long db = parse_number(value, INT_MAX, "db", shown);
          if (db_given && db != e.db) bad_uri(shown, "two different databases");
          e.db = db;
          db_given = true;
        } else if (name == "quarantine") {
          if (value != "on" && value != "off") bad_uri(shown, "quarantine is on or off");
          e.quarantine = value == "on";
        } else if (!parse_tls_item(name, value, e, shown)) {
          bad_uri(shown,
                  "unknown parameter '" + name +
                      "' (known: prefix, timeout, db, quarantine; rediss: cacert, cert, key, "
                      "insecure)");
        }
      });
  check_tls_items(e, shown);
}

// "host", "host:port", "[v6]" or "[v6]:port" into e.host; the port's text.
std::string parse_host(std::string hostport, RedisUri& e, const std::string& shown) {
  std::string port;
  if (!hostport.empty() && hostport[0] == '[') { // [IPv6]:port
    auto close = hostport.find(']');
    if (close == std::string::npos) bad_uri(shown, "an IPv6 address lacks its ']'");
    e.host = hostport.substr(1, close - 1);
    std::string after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') bad_uri(shown, "expected [IPV6]:PORT");
      port = after.substr(1);
      if (port.empty()) bad_uri(shown, "an empty port");
    }
  } else {
    auto colon = hostport.rfind(':');
    if (colon != std::string::npos) {
      port = hostport.substr(colon + 1);
      if (port.empty()) bad_uri(shown, "an empty port");
      hostport = hostport.substr(0, colon);
    }
    if (!hostport.empty()) e.host = hostport;
  }
  if (e.host.empty()) bad_uri(shown, "an empty host");
  return port;
}

// "host[:port][/db]" of a redis:// URI, without user info and query.
void parse_tcp_target(const std::string& s, RedisUri& e, bool& db_given, const std::string& shown) {
  auto slash = s.find('/');
  std::string path = slash == std::string::npos ? "" : s.substr(slash + 1);
  std::string port = parse_host(s.substr(0, slash), e, shown);
  if (!port.empty()) {
    // Never echoed: "redis://admin:secret" (no "@host") puts a password here.
    if (!all_digits(port))
      bad_uri(shown, "the port must be a number (a password goes before '@host')");
    e.port = static_cast<int>(parse_number(port, 65535, "the port", shown));
    if (e.port == 0) bad_uri(shown, "port 0");
  }
  if (!path.empty()) {
    e.db = parse_number(path, INT_MAX, "the database (the path)", shown);
    db_given = true;
  }
}

// The password from SIMBA_REDIS_PASSWORD when the URI has none.
void take_password(RedisUri& e, const std::string& shown) {
  if (e.password.empty()) {
    if (const char* p = std::getenv(k_redis_password_env); p && *p) e.password = p;
  }
  if (!e.user.empty() && e.password.empty())
    bad_uri(shown,
            std::string("a user name needs a password (give it in ") + k_redis_password_env + ")");
}

} // namespace

namespace uri_parts {

// `rest` is //[userinfo@]NODES[/path][?query] (NODES: one host, a socket's
// empty authority, or the list of redis+sentinel: and redis+cluster:):
// takes the user info into `e` and the query into `query`, and returns
// NODES[/path]. The last '@' ends the user info: a careless password may
// hold '/' or '@' (the same rule as redact()). `form`: the refusal of a
// `rest` without "//".
std::string split_node_uri(const std::string& rest, RedisUri& e, std::string& query,
                           const char* form, const std::string& shown) {
  if (rest.rfind("//", 0) != 0) bad_uri(shown, form);
  std::string s = rest.substr(2);
  if (auto at = s.rfind('@'); at != std::string::npos) {
    parse_userinfo(s.substr(0, at), e, shown);
    s = s.substr(at + 1);
  }
  if (auto q = s.find('?'); q != std::string::npos) {
    query = s.substr(q + 1);
    s = s.substr(0, q);
  }
  return s;
}

// `rest` is what follows "redis:", "rediss:" or "redis+unix:".
RedisUri parse_redis(bool unix_socket, bool tls, const std::string& rest,
                     const std::string& shown) {
  RedisUri e;
  e.unix_socket = unix_socket;
  e.tls = tls;
  std::string s = rest;
  std::string query;
  bool db_given = false;
  if (s.rfind("//", 0) != 0) {
    if (!e.unix_socket)
      bad_uri(shown,
              e.tls ? "expected rediss://HOST[:PORT][/DB]" : "expected redis://HOST[:PORT][/DB]");
    if (s.empty() || s[0] != '/') bad_uri(shown, "expected redis+unix:///ABSOLUTE/PATH.sock");
    s = "//" + s; // redis+unix:/path.sock: an empty authority
  }
  s = split_node_uri(s, e, query, "", shown);
  if (e.unix_socket) {
    if (s.empty() || s[0] != '/')
      bad_uri(shown, "expected redis+unix:///ABSOLUTE/PATH.sock (no host)");
    if (s.back() == '/') bad_uri(shown, "the path names a directory, not a socket");
    e.path = percent_decode(s, shown);
  } else {
    parse_tcp_target(s, e, db_given, shown);
  }
  parse_query(query, e, db_given, shown);
  take_password(e, shown);
  return e;
}

// "HOST[:PORT],HOST[:PORT]..." of a redis+sentinel:// (`what`: "a
// sentinel") or redis+cluster:// ("a seed node") URI, each port
// `default_port` unless given.
std::vector<RedisSentinels::Node> parse_node_list(const std::string& list, int default_port,
                                                  const std::string& what,
                                                  const std::string& shown) {
  std::vector<RedisSentinels::Node> nodes;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = std::min(list.find(',', pos), list.size());
    RedisUri node;
    node.host.clear();
    std::string port = parse_host(list.substr(pos, comma - pos), node, shown);
    RedisSentinels::Node n{node.host, default_port};
    if (!port.empty()) {
      // Never echoed: "admin:secret/m" (no "@") puts a password here.
      if (!all_digits(port))
        bad_uri(shown, what + "'s port must be a number (a password goes before '@host')");
      n.port = static_cast<int>(parse_number(port, 65535, what + "'s port", shown));
      if (n.port == 0) bad_uri(shown, "port 0");
    }
    nodes.push_back(n);
    pos = comma + 1;
  }
  return nodes;
}

// Each sentinel counts once toward the majority that names the master: one
// listed twice would count twice (as written; two names of one host are
// not seen, README says so).
void parse_sentinel_nodes(const std::string& list, RedisUri& e, const std::string& shown) {
  e.sentinel.nodes = parse_node_list(list, 26379, "a sentinel", shown);
  const auto& nodes = e.sentinel.nodes;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (nodes[j].port == nodes[i].port && strcasecmp(nodes[j].host.c_str(), nodes[i].host.c_str()) == 0)
        bad_uri(shown, "the sentinel " + nodes[i].host + ":" + std::to_string(nodes[i].port) +
                           " is listed twice (each sentinel counts once toward the majority)");
}


// `rest` follows "redis+sentinel:": //[userinfo@]NODES/MASTER[/db][?query]
RedisUri parse_sentinel(bool tls, const std::string& rest, const std::string& shown) {
  RedisUri e;
  e.sentinel.tls = tls; // to the sentinels
  e.tls = tls;          // to the master, with the same ?cacert= ?cert= ?key= ?insecure=
  std::string query;
  std::string s = split_node_uri(rest, e, query, k_sentinel_form, shown);
  auto slash = s.find('/');
  if (slash == std::string::npos || slash == 0) bad_uri(shown, k_sentinel_form);
  parse_sentinel_nodes(s.substr(0, slash), e, shown);
  std::string path = s.substr(slash + 1);
  auto db_slash = path.find('/');
  e.sentinel.master = percent_decode(path.substr(0, db_slash), shown);
  if (e.sentinel.master.empty()) bad_uri(shown, "no master name: " + std::string(k_sentinel_form));
  bool db_given = false;
  if (db_slash != std::string::npos) {
    e.db = parse_number(path.substr(db_slash + 1), INT_MAX, "the database (the path)", shown);
    db_given = true;
  }
  parse_query(query, e, db_given, shown);
  take_password(e, shown);
  return e;
}

// `rest` follows "redis+cluster:": //[userinfo@]NODES[/0][?query]. The
// seeds are where simba asks for the slot map; the first master it finds
// is where it starts (host and port, for messages until a call routes).
RedisUri parse_cluster(bool tls, const std::string& rest, const std::string& shown) {
  RedisUri e;
  e.tls = tls;
  std::string query;
  std::string s = split_node_uri(rest, e, query, k_cluster_form, shown);
  auto slash = s.find('/');
  if (slash == 0) bad_uri(shown, k_cluster_form);
  e.cluster.seeds = parse_node_list(s.substr(0, slash), 6379, "a seed node", shown);
  bool db_given = false;
  if (slash != std::string::npos && slash + 1 < s.size()) {
    e.db = parse_number(s.substr(slash + 1), INT_MAX, "the database (the path)", shown);
    db_given = true;
  }
  parse_query(query, e, db_given, shown);
  if (e.db != 0) bad_uri(shown, "a Redis Cluster has database 0 only");
  e.host = e.cluster.seeds[0].host;
  e.port = e.cluster.seeds[0].port;
  take_password(e, shown);
  return e;
}

} // namespace uri_parts

std::string redis_where(const RedisUri& u) {
  if (u.unix_socket) return u.path;
  std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  return host + ":" + std::to_string(u.port);
}

namespace {

// "NODE,NODE"
std::string node_list(const std::vector<RedisSentinels::Node>& nodes) {
  std::string d;
  for (size_t i = 0; i < nodes.size(); ++i) {
    RedisUri node;
    node.host = nodes[i].host;
    node.port = nodes[i].port;
    d += (i ? "," : "") + redis_where(node);
  }
  return d;
}

// "redis+sentinel://USER@NODE,NODE/MASTER"
std::string sentinel_describe(const RedisUri& u, const std::string& user) {
  return (u.sentinel.tls ? "rediss+sentinel://" : "redis+sentinel://") + user +
         node_list(u.sentinel.nodes) + "/" + percent_encode(u.sentinel.master);
}

} // namespace

std::string redis_describe(const RedisUri& u) {
  std::string user = u.user.empty() ? "" : percent_encode(u.user) + "@";
  std::string prefix = "prefix=" + percent_encode(u.prefix);
  std::string db = std::to_string(u.db);
  std::string d =
      !u.sentinel.nodes.empty()  ? sentinel_describe(u, user) + "/" + db + "?" + prefix
      : !u.cluster.seeds.empty() ? (u.tls ? "rediss+cluster://" : "redis+cluster://") + user +
                                       node_list(u.cluster.seeds) + "/0?" + prefix
      : u.unix_socket
          ? "redis+unix://" + user + u.path + "?db=" + db + "&" + prefix
          : (u.tls ? "rediss://" : "redis://") + user + redis_where(u) + "/" + db + "?" + prefix;
  if (!u.quarantine) d += "&quarantine=off";
  if (!u.tls_ca.empty()) d += "&cacert=" + percent_encode(u.tls_ca);
  if (!u.tls_cert.empty())
    d += "&cert=" + percent_encode(u.tls_cert) + "&key=" + percent_encode(u.tls_key);
  if (u.tls_insecure) d += "&insecure=1";
  return d;
}

} // namespace simba::backend
