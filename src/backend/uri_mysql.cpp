// MySQL and MariaDB URIs (uri.hpp): mysql://user[:password]@host[:port]/database
// with simba's parameters; every secret remembered so that messages can
// hide it. The password may come from SIMBA_MYSQL_PASSWORD instead (and
// then from an option file, read when the backend opens:
// mysql/option_file.hpp).
#include "backend/uri.hpp"
#include "backend/uri_parts.hpp"

#include "core/duration.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace simba::backend {
using namespace uri_parts;

namespace {

MysqlUri::Tls parse_tls(const std::string& v, const std::string& shown) {
  if (v == "disable") return MysqlUri::Tls::disable;
  if (v == "prefer") return MysqlUri::Tls::prefer;
  if (v == "require") return MysqlUri::Tls::require;
  if (v == "verify-ca") return MysqlUri::Tls::verify_ca;
  if (v == "verify-full") return MysqlUri::Tls::verify_full;
  bad_uri(shown, "tls is disable, prefer, require, verify-ca or verify-full");
}

void parse_mysql_query(const std::string& query, MysqlUri& u, const std::string& shown) {
  for_each_query_item(
      query, shown, [&](const std::string& name, const std::string& value, const std::string&) {
        if (name == "socket") {
          if (value.empty() || value[0] != '/') bad_uri(shown, "socket is an absolute path");
          u.socket = value;
        } else if (name == "tls") {
          u.tls = parse_tls(value, shown);
        } else if (name == "cacert") {
          if (value.empty()) bad_uri(shown, "an empty cacert");
          u.cacert = value;
        } else if (name == "timeout") {
          u.timeout_ms = core::parse_duration(value, "timeout in the backend URI");
          if (u.timeout_ms <= 0) bad_uri(shown, "the timeout must be positive");
        } else if (name == "prefix") {
          // Part of a quoted identifier: letters, digits and '_'.
          if (value.size() > 40 || !std::all_of(value.begin(), value.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
              }))
            bad_uri(shown, "the prefix may hold only letters, digits and '_' (at most 40)");
          u.prefix = value;
        } else if (name == "option-file") {
          if (value.empty() || value[0] != '/') bad_uri(shown, "option-file is an absolute path");
          u.option_file = value;
        } else if (name == "quarantine") {
          if (value != "on" && value != "off") bad_uri(shown, "quarantine is on or off");
          u.quarantine = value == "on";
        } else {
          bad_uri(shown, "unknown parameter '" + name +
                             "' (socket, tls, cacert, timeout, prefix, quarantine and option-file are "
                             "known)");
        }
      });
}

// host[:port] or [v6]:port
void parse_host_port(const std::string& hp, MysqlUri& u, const std::string& shown) {
  std::string host = hp, port;
  if (!hp.empty() && hp[0] == '[') {
    auto close = hp.find(']');
    if (close == std::string::npos) bad_uri(shown, "an IPv6 address without its ']'");
    host = hp.substr(1, close - 1);
    if (close + 1 < hp.size()) {
      if (hp[close + 1] != ':') bad_uri(shown, "expected ':PORT' after the IPv6 address");
      port = hp.substr(close + 2);
    }
  } else if (auto colon = hp.rfind(':'); colon != std::string::npos) {
    host = hp.substr(0, colon);
    port = hp.substr(colon + 1);
  }
  if (!host.empty()) u.host = percent_decode(host, shown);
  // Not echoed: "mysql://user:secret" forgot its "@HOST", and "secret" is
  // no port (redact() hides it in `shown` for the same reason).
  if (!port.empty() && !all_digits(port))
    bad_uri(shown, "the port must be a number (a password without '@HOST' after it?)");
  if (!port.empty()) u.port = static_cast<int>(parse_number(port, 65535, "the port", shown));
}

} // namespace

namespace uri_parts {

MysqlUri parse_mysql(const std::string& scheme, const std::string& rest, const std::string& shown) {
  const std::string expected = "expected " + scheme + "://USER[:PASSWORD]@HOST[:PORT]/DATABASE";
  if (rest.rfind("//", 0) != 0) bad_uri(shown, expected);
  MysqlUri u;
  std::string base = rest.substr(2), query;
  if (auto q = base.find('?'); q != std::string::npos) {
    query = base.substr(q + 1);
    base = base.substr(0, q);
  }
  auto slash = base.find('/');
  std::string authority = base.substr(0, slash);
  if (slash != std::string::npos) u.database = percent_decode(base.substr(slash + 1), shown);
  if (u.database.empty() || u.database.find('/') != std::string::npos)
    bad_uri(shown, "no database (" + expected.substr(9) + ")");
  if (std::count(authority.begin(), authority.end(), '@') > 1)
    bad_uri(shown, "the user info holds an '@': percent-encode it as %40 in the user name or "
                   "password");
  if (auto at = authority.rfind('@'); at != std::string::npos) {
    std::string info = authority.substr(0, at);
    authority = authority.substr(at + 1);
    auto colon = info.find(':');
    u.user = percent_decode(info.substr(0, colon), shown);
    if (colon != std::string::npos) {
      std::string written = info.substr(colon + 1);
      u.password = percent_decode(written, shown);
      u.secrets = {written, u.password};
      u.password_note = "the password came from the URI";
    }
  }
  parse_host_port(authority, u, shown);
  parse_mysql_query(query, u, shown);
  if (u.user.empty()) bad_uri(shown, "no user name (" + expected.substr(9) + ")");
  // Each ends at a NUL in the login packet: the rest would be read as the
  // packet's next fields.
  if (u.user.find('\0') != std::string::npos || u.database.find('\0') != std::string::npos)
    bad_uri(shown, "no NUL (%00) in the user name or the database");
  if (u.password.empty()) {
    if (const char* p = std::getenv(k_mysql_password_env); p && *p) {
      u.password = p;
      u.secrets.push_back(p);
      u.password_note = std::string("the password came from ") + k_mysql_password_env;
    }
  }
  u.shown = shown;
  return u;
}

} // namespace uri_parts

} // namespace simba::backend
