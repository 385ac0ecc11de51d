// Reading a postgres URI and libpq's environment (conninfo.hpp).
#include "backend/postgres/conninfo.hpp"

#include "backend/accounts.hpp"

#include <cstdlib>
#include <unistd.h>

namespace simba::backend::pg {
namespace {

using Values = std::map<std::string, std::string>;

// libpq's keywords simba reads, each with its environment variable ("" for
// none). A keyword of libpq's that is not here is refused by name.
const std::map<std::string, const char*>& keywords() {
  static const std::map<std::string, const char*> k = {
      {"host", "PGHOST"},
      {"hostaddr", "PGHOSTADDR"},
      {"port", "PGPORT"},
      {"dbname", "PGDATABASE"},
      {"user", "PGUSER"},
      {"password", "PGPASSWORD"},
      {"passfile", "PGPASSFILE"},
      {"connect_timeout", "PGCONNECT_TIMEOUT"},
      {"client_encoding", "PGCLIENTENCODING"},
      {"options", "PGOPTIONS"},
      {"application_name", "PGAPPNAME"},
      {"fallback_application_name", ""},
      {"keepalives", ""},
      {"keepalives_idle", ""},
      {"keepalives_interval", ""},
      {"keepalives_count", ""},
      {"tcp_user_timeout", ""},
      {"sslmode", "PGSSLMODE"},
      {"requiressl", "PGREQUIRESSL"},
      {"sslcert", "PGSSLCERT"},
      {"sslkey", "PGSSLKEY"},
      {"sslrootcert", "PGSSLROOTCERT"},
      {"target_session_attrs", "PGTARGETSESSIONATTRS"},
      {"scram_cache", ""},
      // Accepted, with only the values that change nothing here (none of
      // them weakens what simba checks).
      {"channel_binding", "PGCHANNELBINDING"},
      {"gssencmode", "PGGSSENCMODE"},
      {"sslcompression", "PGSSLCOMPRESSION"},
      {"sslsni", "PGSSLSNI"},
      {"ssl_min_protocol_version", "PGSSLMINPROTOCOLVERSION"},
      {"ssl_max_protocol_version", "PGSSLMAXPROTOCOLVERSION"},
      {"krbsrvname", "PGKRBSRVNAME"},
      {"gsslib", "PGGSSLIB"},
      {"load_balance_hosts", "PGLOADBALANCEHOSTS"},
      {"sslcertmode", "PGSSLCERTMODE"},
      // Not supported: refused when set (never silently dropped).
      {"service", "PGSERVICE"},
      {"sslcrl", "PGSSLCRL"},
      {"sslcrldir", "PGSSLCRLDIR"},
      {"sslpassword", ""},
      {"requirepeer", "PGREQUIREPEER"},
      {"require_auth", "PGREQUIREAUTH"},
      {"replication", ""},
  };
  return k;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool decode(const std::string& s, std::string& out) {
  out.clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return false;
    int a = hex_digit(s[i + 1]), b = hex_digit(s[i + 2]);
    if (a < 0 || b < 0) return false;
    out.push_back(static_cast<char>(a * 16 + b));
    i += 2;
  }
  return true;
}

// "host[:port],[v6]:port,..." of the URI's authority into host and port
// lists as libpq's keywords hold them.
std::string parse_hosts(const std::string& spec, Values& v) {
  std::string hosts, ports;
  bool first = true;
  for (const std::string& part : split_commas(spec)) {
    std::string host = part, port;
    if (!part.empty() && part[0] == '[') {
      size_t close = part.find(']');
      if (close == std::string::npos) return "an IPv6 address without its closing ']'";
      host = part.substr(1, close - 1);
      if (close + 1 < part.size()) {
        if (part[close + 1] != ':') return "unexpected text after an IPv6 address";
        port = part.substr(close + 2);
      }
    } else if (size_t colon = part.rfind(':'); colon != std::string::npos) {
      host = part.substr(0, colon);
      port = part.substr(colon + 1);
    }
    std::string dhost;
    if (!decode(host, dhost)) return "a malformed %-escape in a host";
    hosts += (first ? "" : ",") + dhost;
    ports += (first ? "" : ",") + port;
    first = false;
  }
  if (!spec.empty()) v["host"] = hosts;
  if (ports.find_first_not_of(',') != std::string::npos) v["port"] = ports;
  return "";
}

// postgres://[user[:password]@]hosts[/dbname][?query] into keyword values.
std::string parse_uri(const std::string& uri, Values& v) {
  size_t scheme = uri.find("://");
  if (scheme == std::string::npos) return "not a postgres:// URI";
  std::string rest = uri.substr(scheme + 3), query;
  if (size_t q = rest.find('?'); q != std::string::npos) {
    query = rest.substr(q + 1);
    rest.resize(q);
  }
  std::string authority = rest.substr(0, rest.find('/'));
  if (size_t slash = rest.find('/'); slash != std::string::npos && slash + 1 < rest.size()) {
    if (!decode(rest.substr(slash + 1), v["dbname"])) return "a malformed %-escape in the dbname";
  }
  if (size_t at = authority.find('@'); at != std::string::npos) {
    std::string info = authority.substr(0, at);
    authority.erase(0, at + 1);
    size_t colon = info.find(':');
    if (!decode(info.substr(0, colon), v["user"])) return "a malformed %-escape in the user";
    if (colon != std::string::npos && !decode(info.substr(colon + 1), v["password"]))
      return "a malformed %-escape in the password";
    if (v["user"].empty()) v.erase("user");
    if (colon != std::string::npos && v["password"].empty()) v.erase("password");
  }
  if (std::string why = parse_hosts(authority, v); !why.empty()) return why;
  size_t at = 0;
  while (at <= query.size()) {
    size_t amp = query.find('&', at);
    std::string item = query.substr(at, amp == std::string::npos ? std::string::npos : amp - at);
    at = amp == std::string::npos ? query.size() + 1 : amp + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string key, value;
    if (eq == std::string::npos || !decode(item.substr(0, eq), key) ||
        !decode(item.substr(eq + 1), value))
      return "a malformed URI query parameter";
    if (key == "ssl" && value == "true") key = "sslmode", value = "require"; // as libpq
    if (!keywords().count(key)) return "unknown URI query parameter \"" + key + "\"";
    v[key] = value;
  }
  return "";
}

} // namespace

std::string Endpoint::shown() const {
  if (unix_socket()) return socket_path();
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

// Defined in conninfo_values.cpp: the keyword values into `out`.
std::string take_values(const std::map<std::string, std::string>& v, ConnInfo& out);

std::string parse_conninfo(const std::string& uri,
                           const std::map<std::string, std::string>& defaults, ConnInfo& out) {
  Values from_uri;
  if (std::string why = parse_uri(uri, from_uri); !why.empty()) return "invalid URI: " + why;
  Values v = defaults;
  for (auto& [k, value] : from_uri) v[k] = value;
  for (auto& [k, env] : keywords()) {
    if (v.count(k) || !*env) continue;
    if (const char* e = std::getenv(env); e && *e) v[k] = e;
  }
  if (!v.count("user")) v["user"] = accounts::effective_user_name(); // libpq's default
  if (!v.count("dbname")) v["dbname"] = v["user"];
  return take_values(v, out);
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> parts(1);
  for (char c : s)
    if (c == ',')
      parts.emplace_back();
    else
      parts.back().push_back(c);
  return parts;
}

} // namespace simba::backend::pg
