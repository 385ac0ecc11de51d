// libpq's keyword values, checked, into a ConnInfo (conninfo.hpp): hosts
// and ports, TLS modes, timeouts; what simba does not support is refused by
// name rather than ignored.
#include "backend/postgres/conninfo.hpp"

#include <cstdlib>
#include <sys/stat.h>

namespace simba::backend::pg {
namespace {

using Values = std::map<std::string, std::string>;

// Debian's libpq looks for a local server's socket here.
constexpr const char* k_default_socket_dir = "/var/run/postgresql";

std::string get(const Values& v, const std::string& k) {
  auto it = v.find(k);
  return it == v.end() ? "" : it->second;
}

bool to_int(const std::string& s, long max, int& out) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  long n = std::strtol(s.c_str(), nullptr, 10);
  if (n > max) return false;
  out = static_cast<int>(n);
  return true;
}

std::string take_endpoints(const Values& v, ConnInfo& out) {
  std::vector<std::string> hosts = split_commas(get(v, "host"));
  std::vector<std::string> addrs = split_commas(get(v, "hostaddr"));
  std::vector<std::string> ports = split_commas(get(v, "port"));
  if (get(v, "hostaddr").empty()) addrs.assign(hosts.size(), "");
  if (get(v, "host").empty() && !get(v, "hostaddr").empty()) hosts.assign(addrs.size(), "");
  if (addrs.size() != hosts.size())
    return "could not match " + std::to_string(addrs.size()) + " host addresses to " +
           std::to_string(hosts.size()) + " host names";
  if (ports.size() != 1 && ports.size() != hosts.size())
    return "could not match " + std::to_string(ports.size()) + " port numbers to " +
           std::to_string(hosts.size()) + " hosts";
  for (size_t i = 0; i < hosts.size(); ++i) {
    Endpoint e;
    e.host = hosts[i];
    e.address = addrs[i];
    if (e.host.empty() && e.address.empty()) e.host = k_default_socket_dir;
    if (e.host.empty()) e.host = e.address;
    const std::string& port = ports.size() == 1 ? ports[0] : ports[i];
    if (!port.empty() && (!to_int(port, 65535, e.port) || e.port == 0))
      return "invalid port number: \"" + port + "\"";
    out.endpoints.push_back(e);
  }
  return "";
}

bool one_of(const std::string& s, std::initializer_list<const char*> ok) {
  for (const char* o : ok)
    if (s == o) return true;
  return false;
}

// Set only to a value that changes nothing here, or refused.
std::string refuse_unsupported(const Values& v) {
  for (const char* k : {"service", "sslcrl", "sslcrldir", "sslpassword", "requirepeer",
                        "require_auth", "replication"})
    if (!get(v, k).empty())
      return std::string("the parameter ") + k + " is not supported by simba's PostgreSQL client";
  struct Allowed {
    const char* key;
    std::initializer_list<const char*> values;
  };
  for (const Allowed& a : {Allowed{"channel_binding", {"", "disable", "prefer"}},
                           Allowed{"gssencmode", {"", "disable", "prefer"}},
                           Allowed{"load_balance_hosts", {"", "disable"}},
                           Allowed{"sslcertmode", {"", "disable", "allow"}}})
    if (!one_of(get(v, a.key), a.values))
      return std::string(a.key) + "=" + get(v, a.key) +
             " is not supported by simba's PostgreSQL client (no GSSAPI, no channel binding)";
  return "";
}

std::string home_file(const char* name) {
  const char* home = std::getenv("HOME");
  return home && *home ? std::string(home) + "/.postgresql/" + name : "";
}

bool exists(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0;
}

// sslmode, and the files: libpq's defaults under ~/.postgresql/.
std::string take_tls(const Values& v, ConnInfo& out) {
  out.sslmode = get(v, "sslmode");
  if (out.sslmode.empty()) out.sslmode = get(v, "requiressl") == "1" ? "require" : "prefer";
  if (!one_of(out.sslmode, {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}))
    return "invalid sslmode value: \"" + out.sslmode + "\"";
  out.sslrootcert = get(v, "sslrootcert");
  if (out.sslrootcert == "system") {
    // As libpq 16: the system's store names anyone's server, so only with
    // the name checked.
    if (v.count("sslmode") && out.sslmode != "verify-full")
      return "weak sslmode \"" + out.sslmode +
             "\" may not be used with sslrootcert=system (use \"verify-full\")";
    out.sslmode = "verify-full";
  } else if (out.sslrootcert.empty() && exists(home_file("root.crt"))) {
    out.sslrootcert = home_file("root.crt");
  }
  // require with a root certificate checks the chain, as libpq does.
  if (out.sslmode == "require" && !out.sslrootcert.empty()) out.sslmode = "verify-ca";
  if ((out.sslmode == "verify-ca" || out.sslmode == "verify-full") && out.sslrootcert.empty())
    return "sslmode=" + out.sslmode +
           " needs a root certificate: give sslrootcert=FILE (or sslrootcert=system), or put it "
           "in ~/.postgresql/root.crt";
  out.sslcert = get(v, "sslcert");
  out.sslkey = get(v, "sslkey");
  if (out.sslcert.empty() && exists(home_file("postgresql.crt")))
    out.sslcert = home_file("postgresql.crt");
  if (out.sslkey.empty() && exists(home_file("postgresql.key")))
    out.sslkey = home_file("postgresql.key");
  if (out.sslcert.empty() || out.sslkey.empty()) out.sslcert.clear(), out.sslkey.clear();
  return "";
}

std::string take_numbers(const Values& v, ConnInfo& out) {
  struct Number {
    const char* key;
    int* to;
  };
  int keepalives = 1;
  for (const Number& n :
       {Number{"connect_timeout", &out.connect_timeout_s}, Number{"keepalives", &keepalives},
        Number{"keepalives_idle", &out.keepalives_idle},
        Number{"keepalives_interval", &out.keepalives_interval},
        Number{"keepalives_count", &out.keepalives_count},
        Number{"tcp_user_timeout", &out.tcp_user_timeout_ms}}) {
    std::string s = get(v, n.key);
    if (!s.empty() && s[0] == '-') s = "0"; // libpq: negative is none
    if (!s.empty() && !to_int(s, 2147483647L, *n.to))
      return std::string("invalid integer value \"") + s + "\" for " + n.key;
  }
  out.keepalives = keepalives != 0;
  // libpq: a connect_timeout of 1 is taken as 2.
  if (out.connect_timeout_s == 1) out.connect_timeout_s = 2;
  return "";
}

} // namespace

std::string take_values(const Values& v, ConnInfo& out) {
  out = ConnInfo{};
  if (std::string why = refuse_unsupported(v); !why.empty()) return why;
  if (std::string why = take_endpoints(v, out); !why.empty()) return why;
  if (std::string why = take_tls(v, out); !why.empty()) return why;
  if (std::string why = take_numbers(v, out); !why.empty()) return why;
  out.user = get(v, "user");
  out.password = get(v, "password");
  out.dbname = get(v, "dbname");
  out.options = get(v, "options");
  out.client_encoding = get(v, "client_encoding");
  out.application_name = get(v, "application_name");
  if (out.application_name.empty()) out.application_name = get(v, "fallback_application_name");
  out.passfile = get(v, "passfile");
  if (out.passfile.empty())
    if (const char* home = std::getenv("HOME"); home && *home)
      out.passfile = std::string(home) + "/.pgpass";
  out.target_session_attrs = get(v, "target_session_attrs");
  if (out.target_session_attrs.empty()) out.target_session_attrs = "any";
  if (!one_of(out.target_session_attrs,
              {"any", "read-write", "read-only", "primary", "standby", "prefer-standby"}))
    return "invalid target_session_attrs value: \"" + out.target_session_attrs + "\"";
  std::string cache = get(v, "scram_cache");
  if (!one_of(cache, {"", "on", "off"})) return "scram_cache is on or off";
  out.scram_cache = cache != "off";
  return "";
}

} // namespace simba::backend::pg
