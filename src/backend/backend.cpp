// open_backend(): the backend URI -> implementation map (DESIGN §5).
#include "backend/backend.hpp"

#include "backend/redis_backend.hpp"
#include "backend/sqlite/sqlite_backend.hpp"
#include "core/error.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <pwd.h>
#include <unistd.h>

namespace simba::backend {
namespace {

struct Uri {
  std::string scheme; // lower case
  std::string rest;   // everything after "scheme:"
  std::string shown;  // the URI with any password hidden, for messages
};

using Factory = std::function<std::unique_ptr<Backend>(const Uri&, Access)>;

// Hides the user-info part ("user:password@") of a URI. The last '@' of the
// whole string counts, since a careless password may hold '/' or '@'; a path
// with an '@' is hidden too, which is the safe side. Without an '@', what
// follows the authority's last ':' is hidden unless it is a port number:
// "redis://admin:secret" forgot the "@host", and "secret" is no port.
std::string redact(const std::string& uri) {
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

bool valid_scheme(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.')
      return false;
  return true;
}

constexpr const char* k_expected =
    "expected sqlite:PATH, sqlite:///ABSOLUTE/PATH, redis://HOST[:PORT][/DB] or "
    "redis+unix:///PATH.sock";

Uri parse_uri(const std::string& uri) {
  Uri u;
  u.shown = redact(uri);
  auto colon = uri.find(':');
  if (colon == std::string::npos || !valid_scheme(uri.substr(0, colon)))
    throw UsageError("invalid backend URI '" + u.shown + "': " + k_expected);
  for (char c : uri.substr(0, colon))
    u.scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  u.rest = uri.substr(colon + 1);
  return u;
}

// sqlite:///abs/path.db, sqlite:/abs/path.db, sqlite:relative.db
std::unique_ptr<Backend> open_sqlite_uri(const Uri& u, Access access) {
  std::string path = u.rest;
  if (path.rfind("//", 0) == 0) {
    // An authority part: only the empty one (sqlite:///abs) is meaningful.
    if (path.size() == 2)
      throw UsageError("invalid backend URI '" + u.shown + "': no database path (sqlite:PATH)");
    if (path[2] != '/')
      throw UsageError("invalid backend URI '" + u.shown +
                       "': a sqlite URI names a local file, not a host (sqlite:///ABSOLUTE/PATH)");
    path = path.substr(2);
  }
  if (path.empty())
    throw UsageError("invalid backend URI '" + u.shown + "': no database path (sqlite:PATH)");
  if (path.back() == '/')
    throw UsageError("invalid backend URI '" + u.shown + "': the path names a directory, not a file");
  SqliteOpen how;
  how.create_file = access == Access::use;
  how.read_only_ok = access == Access::inspect;
  return open_sqlite(path, how);
}

// redis://[[user]:password@]host[:port][/db][?prefix=...&timeout=...],
// redis+unix:///path.sock[?db=N&prefix=...&timeout=...]
std::unique_ptr<Backend> open_redis_uri(const Uri& u, Access) {
  return open_redis(u.scheme, u.rest, u.shown);
}

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> map = {
      {"sqlite", open_sqlite_uri},
      {"redis", open_redis_uri},
      {"redis+unix", open_redis_uri},
  };
  return map;
}

std::string home_dir() {
  if (const char* h = std::getenv("HOME"); h && *h) return h;
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir && *pw->pw_dir) return pw->pw_dir;
  throw UsageError("cannot find the default database: HOME is not set; give --backend");
}

// $SIMBA_HOME/simba.db, else ${XDG_STATE_HOME:-$HOME/.local/state}/simba/simba.db
// (an XDG_STATE_HOME that is not absolute counts as unset)
std::string default_sqlite_path() {
  if (const char* s = std::getenv("SIMBA_HOME"); s && *s) return std::string(s) + "/simba.db";
  // The XDG spec: a relative XDG_STATE_HOME is invalid and ignored.
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && x[0] == '/')
    return std::string(x) + "/simba/simba.db";
  return home_dir() + "/.local/state/simba/simba.db";
}

} // namespace

std::unique_ptr<Backend> open_backend(const std::string& uri, Access access) {
  if (uri.empty()) {
    // The default location is the one place simba makes when missing.
    SqliteOpen how;
    how.create_directories = how.create_file = access == Access::use;
    how.read_only_ok = access == Access::inspect;
    return open_sqlite(default_sqlite_path(), how);
  }
  Uri u = parse_uri(uri);
  auto it = factories().find(u.scheme);
  if (it == factories().end())
    throw UsageError("unknown backend '" + u.scheme + "' in '" + u.shown + "': " + k_expected);
  return it->second(u, access);
}

} // namespace simba::backend
