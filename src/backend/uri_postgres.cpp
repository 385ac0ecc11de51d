// PostgreSQL URIs: simba's own parameters taken out, the rest kept for the
// connection (postgres/conninfo.hpp), every secret remembered so that
// messages can hide it (uri.hpp).
#include "backend/uri.hpp"
#include "backend/uri_parts.hpp"

#include "core/duration.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace simba::backend {
using namespace uri_parts;

namespace {

// A query item that holds a secret the connection accepts in the URI.
bool secret_parameter(const std::string& name) {
  return name == "password" || name == "sslpassword";
}

// The query of a postgres URI: simba's parameters into `u`, the rest kept
// for the connection (in `kept`, and in `shown` with any secret hidden).
void parse_postgres_query(const std::string& query, PostgresUri& u, std::string& kept,
                          std::string& shown_query, const std::string& shown) {
  for_each_query_item(
      query, shown,
      [&](const std::string& name, const std::string& value, const std::string& item) {
        if (name == "schema") {
          // Any name, quoted in the SQL (postgres/statements.hpp); but
          // PostgreSQL cuts a name past 63 bytes, and a NUL ends the text.
          if (value.empty()) bad_uri(shown, "an empty schema");
          if (value.size() > 63 || value.find('\0') != std::string::npos)
            bad_uri(shown, "the schema name must be 1 to 63 bytes, without NUL");
          u.schema = value;
        } else if (name == "prefix") {
          // Part of an identifier: letters, digits and '_' (quoted, so any
          // case is kept).
          if (value.size() > 40 || !std::all_of(value.begin(), value.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
              }))
            bad_uri(shown, "the prefix may hold only letters, digits and '_' (at most 40)");
          u.prefix = value;
        } else if (name == "timeout") {
          u.timeout_ms = core::parse_duration(value, "timeout in the backend URI");
          if (u.timeout_ms <= 0) bad_uri(shown, "the timeout must be positive");
        } else if (name == "quarantine") {
          if (value != "on" && value != "off") bad_uri(shown, "quarantine is on or off");
          u.quarantine = value == "on";
        } else if (name == "listen") {
          if (value != "on" && value != "off") bad_uri(shown, "listen is on or off");
          u.listen = value == "on";
        } else {
          if (secret_parameter(name) && !value.empty()) {
            u.secrets.push_back(value);
            u.secrets.push_back(item.substr(name.size() + 1)); // as written (escaped)
          }
          kept += (kept.empty() ? "" : "&") + item;
          shown_query +=
              (shown_query.empty() ? "" : "&") + (secret_parameter(name) ? name + "=***" : item);
        }
      });
}

} // namespace

namespace uri_parts {

// `rest` follows "postgres:" or "postgresql:"; postgres/conninfo.cpp reads the rest.
PostgresUri parse_postgres(const std::string& scheme, const std::string& rest,
                           const std::string& shown) {
  if (rest.rfind("//", 0) != 0) bad_uri(shown, "expected " + scheme + "://[USER@]HOST[:PORT]/DB");
  PostgresUri u;
  std::string base = rest, query, kept, shown_query;
  if (auto q = rest.find('?'); q != std::string::npos) {
    base = rest.substr(0, q);
    query = rest.substr(q + 1);
  }
  parse_postgres_query(query, u, kept, shown_query, shown);
  // user:password@ (the last '@' of the authority, as redact() takes it)
  std::string authority = base.substr(
      2, base.find('/', 2) == std::string::npos ? std::string::npos : base.find('/', 2) - 2);
  // libpq splits user info at the first '@', simba's masking at the last:
  // two '@' would print the password's tail as a host name (issue 36 §7).
  if (std::count(authority.begin(), authority.end(), '@') > 1)
    bad_uri(shown, "the user info holds an '@': percent-encode it as %40 in the user name or "
                   "password");
  if (auto at = authority.rfind('@'); at != std::string::npos) {
    std::string info = authority.substr(0, at);
    if (auto colon = info.find(':'); colon != std::string::npos && colon + 1 < info.size()) {
      u.secrets.push_back(info.substr(colon + 1));
      u.secrets.push_back(percent_decode(info.substr(colon + 1), shown));
    }
  } else if (auto colon = authority.rfind(':'); colon != std::string::npos) {
    // "postgres://user:secret" forgot its "@host": libpq would take
    // "secret" for a port, and say so. A port is not a secret (issue 32
    // §1: "host:5432" was shown as "host:***").
    std::string tail = authority.substr(colon + 1);
    if (!std::all_of(tail.begin(), tail.end(),
                     [](char c) { return std::isdigit((unsigned char)c); }))
      u.secrets.push_back(tail);
  }
  u.conninfo = scheme + ":" + base + (kept.empty() ? "" : "?" + kept);
  u.shown = redact(scheme + ":" + base) + (shown_query.empty() ? "" : "?" + shown_query);
  return u;
}

} // namespace uri_parts

} // namespace simba::backend
