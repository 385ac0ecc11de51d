// Looking a password up in the password file (pgpass.hpp).
#include "backend/postgres/pgpass.hpp"

#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace simba::backend::pg {
namespace {

// The five fields of a line, unescaped; false for a line with fewer.
bool fields(const std::string& line, std::vector<std::string>& out) {
  out.assign(1, "");
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '\\' && i + 1 < line.size()) {
      out.back().push_back(line[++i]);
    } else if (c == ':' && out.size() < 5) {
      out.emplace_back();
    } else {
      out.back().push_back(c);
    }
  }
  return out.size() == 5;
}

bool matches(const std::string& pattern, const std::string& value) {
  return pattern == "*" || pattern == value;
}

} // namespace

PassfileLookup passfile_password(const std::string& path, const std::string& host, int port,
                                 const std::string& dbname, const std::string& user) {
  PassfileLookup found;
  if (path.empty()) return found;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return found;
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    found.ignored_for_mode = true;
    return found;
  }
  // libpq names the default socket directory "localhost" here.
  std::string name =
      host == "/var/run/postgresql" || host == "/run/postgresql" ? "localhost" : host;
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> f;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#' || !fields(line, f)) continue;
    if (matches(f[0], name) && matches(f[1], std::to_string(port)) && matches(f[2], dbname) &&
        matches(f[3], user)) {
      found.password = f[4];
      return found;
    }
  }
  return found;
}

} // namespace simba::backend::pg
