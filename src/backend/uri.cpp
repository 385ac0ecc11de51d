// Backend URIs: the scheme, the SQLite URI, redaction and the helpers
// every scheme's parser shares (uri_parts.hpp); Redis URIs are parsed in
// uri_redis.cpp, PostgreSQL URIs in uri_postgres.cpp, etcd URIs in uri_etcd.cpp,
// MySQL URIs in uri_mysql.cpp (uri.hpp).
#include "backend/uri.hpp"

#include "backend/accounts.hpp"
#include "backend/uri_parts.hpp"

#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/names.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace simba::backend {
namespace uri_parts {

[[noreturn]] void bad_uri(const std::string& shown, const std::string& why) {
  throw UsageError("invalid backend URI '" + shown + "': " + why);
}

bool all_digits(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

} // namespace uri_parts

using namespace uri_parts;

namespace {

constexpr const char* k_expected =
    "expected sqlite:PATH, sqlite:///ABSOLUTE/PATH, redis://HOST[:PORT][/DB], rediss://..., "
    "redis+unix:///PATH.sock, postgres://[USER@]HOST[:PORT]/DB, etcd://HOST[:PORT][,...] or "
    "mysql://USER@HOST[:PORT]/DB";

bool valid_scheme(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.')
      return false;
  return true;
}

// ---- sqlite ------------------------------------------------------------------------

// $HOME, else the passwd entry's; absolute, or a usage error (64): a
// relative HOME would put the database under whatever the working
// directory is.
std::string home_dir() {
  const char* h = std::getenv("HOME");
  std::string home = h && *h ? h : "";
  if (home.empty())
    if (std::optional<accounts::User> u = accounts::user(getuid())) home = u->home;
  if (home.empty())
    throw UsageError("cannot find the default database: HOME is not set and uid " +
                     std::to_string(getuid()) +
                     " has no home in /etc/passwd; set SIMBA_HOME or give --backend");
  if (home[0] != '/')
    throw UsageError("cannot find the default database: HOME is not an absolute path ('" +
                     core::escape_control(home) + "'); set SIMBA_HOME or give --backend");
  return home;
}

// $SIMBA_HOME/simba.db, else ${XDG_STATE_HOME:-$HOME/.local/state}/simba/simba.db
SqliteUri default_sqlite() {
  SqliteUri u;
  u.default_location = true;
  if (const char* s = std::getenv("SIMBA_HOME"); s && *s) {
    u.path = std::string(s) + "/simba.db";
    // The XDG spec: a relative XDG_STATE_HOME is invalid and ignored.
  } else if (const char* x = std::getenv("XDG_STATE_HOME"); x && x[0] == '/') {
    u.path = std::string(x) + "/simba/simba.db";
  } else {
    u.path = home_dir() + "/.local/state/simba/simba.db";
  }
  return u;
}

// `rest` follows "sqlite:": ///abs/path.db, /abs/path.db or relative.db
SqliteUri parse_sqlite(const std::string& rest, const std::string& shown) {
  SqliteUri u;
  u.path = rest;
  if (u.path.rfind("//", 0) == 0) {
    // An authority part: only the empty one (sqlite:///abs) is meaningful.
    if (u.path.size() == 2) bad_uri(shown, "no database path (sqlite:PATH)");
    if (u.path[2] != '/')
      bad_uri(shown, "a sqlite URI names a local file, not a host (sqlite:///ABSOLUTE/PATH)");
    u.path = u.path.substr(2);
  }
  if (u.path.empty()) bad_uri(shown, "no database path (sqlite:PATH)");
  if (u.path.back() == '/') bad_uri(shown, "the path names a directory, not a file");
  return u;
}

} // namespace

namespace uri_parts {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

} // namespace

// %XX escapes, so that a password or prefix may hold '@', '/', '&'...
std::string percent_decode(const std::string& s, const std::string& shown) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    int hi = i + 2 < s.size() ? hex_digit(s[i + 1]) : -1;
    int lo = i + 2 < s.size() ? hex_digit(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) bad_uri(shown, "a '%' is not followed by two hex digits");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string percent_encode(const std::string& s, const char* keep) {
  static const char* k_hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || (c != 0 && (std::strchr("-._~", c) || std::strchr(keep, c)))) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += k_hex[c >> 4];
      out += k_hex[c & 15];
    }
  }
  return out;
}

void for_each_query_item(const std::string& query, const std::string& shown,
                         const std::function<void(const std::string& name, const std::string& value,
                                                  const std::string& item)>& take) {
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    std::string item = query.substr(pos, amp - pos);
    pos = amp + 1;
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) bad_uri(shown, "a parameter has no value (name=value)");
    take(item.substr(0, eq), percent_decode(item.substr(eq + 1), shown), item);
  }
}

long parse_number(const std::string& s, long max, const std::string& what,
                  const std::string& shown) {
  if (s.empty() || s.size() > 10 || !all_digits(s))
    bad_uri(shown, what + " must be a number, got '" + s + "'");
  long v = std::strtol(s.c_str(), nullptr, 10);
  if (v > max) bad_uri(shown, what + " is out of range: " + s);
  return v;
}

} // namespace uri_parts

// Hides the user-info part ("user:password@") of a URI. The last '@' of the
// whole string counts, since a careless password may hold '/' or '@'; a path
// with an '@' is hidden too, which is the safe side. Without an '@', what
// follows the authority's last ':' is hidden unless it is a port number:
// "redis://admin:secret" forgot the "@host", and "secret" is no port.
std::string redact(const std::string& uri) {
  // A secret in the query (libpq takes ?password=): its value is hidden.
  for (const char* name : {"password=", "sslpassword="}) {
    auto q = uri.find('?');
    for (size_t at = q; at != std::string::npos; at = uri.find(name, at + 1)) {
      if (at == q || (uri[at - 1] != '?' && uri[at - 1] != '&')) continue;
      size_t from = at + std::strlen(name), end = uri.find('&', from);
      if (end == std::string::npos) end = uri.size();
      if (uri.compare(from, end - from, "***") != 0)
        return redact(uri.substr(0, from) + "***" + uri.substr(end));
    }
  }
  auto authority = uri.find("://");
  size_t from = authority == std::string::npos ? 0 : authority + 3;
  auto at = uri.rfind('@');
  if (at != std::string::npos && at >= from) return uri.substr(0, from) + "***" + uri.substr(at);
  if (authority == std::string::npos) return uri;
  size_t end = uri.find_first_of("/?", from);
  if (end == std::string::npos) end = uri.size();
  size_t colon = uri.rfind(':', end);
  if (colon == std::string::npos || colon < from || uri.find(']', colon) < end) return uri;
  bool port = colon + 1 < end && std::all_of(uri.begin() + colon + 1, uri.begin() + end,
                                             [](char c) { return c >= '0' && c <= '9'; });
  return port ? uri : uri.substr(0, colon + 1) + "***" + uri.substr(end);
}

BackendUri parse_backend_uri(const std::string& uri) {
  if (uri.empty()) return default_sqlite();
  std::string shown = redact(uri);
  auto colon = uri.find(':');
  if (colon == std::string::npos || !valid_scheme(uri.substr(0, colon)))
    throw UsageError("invalid backend URI '" + shown + "': " + k_expected);
  std::string scheme;
  for (char c : uri.substr(0, colon))
    scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string rest = uri.substr(colon + 1);

  if (scheme == "sqlite") return parse_sqlite(rest, shown);
  if (scheme == "redis") return parse_redis(false, false, rest, shown);
  if (scheme == "rediss") return parse_redis(false, true, rest, shown);
  if (scheme == "redis+unix") return parse_redis(true, false, rest, shown);
  if (scheme == "redis+sentinel") return parse_sentinel(false, rest, shown);
  if (scheme == "rediss+sentinel") return parse_sentinel(true, rest, shown);
  if (scheme == "redis+cluster") return parse_cluster(false, rest, shown);
  if (scheme == "rediss+cluster") return parse_cluster(true, rest, shown);
  if (scheme == "postgres" || scheme == "postgresql") return parse_postgres(scheme, rest, shown);
  if (scheme == "etcd" || scheme == "etcds") return parse_etcd(scheme == "etcds", rest, shown);
  if (scheme == "mysql" || scheme == "mariadb") return parse_mysql(scheme, rest, shown);
  throw UsageError("unknown backend '" + scheme + "' in '" + shown + "': " + k_expected);
}

} // namespace simba::backend
