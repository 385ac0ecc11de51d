// /etc/passwd and /etc/group (accounts.hpp).
#include "backend/accounts.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <vector>

namespace simba::backend::accounts {
namespace {

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> f;
  for (size_t start = 0;;) {
    size_t colon = line.find(':', start);
    f.push_back(line.substr(start, colon == std::string::npos ? colon : colon - start));
    if (colon == std::string::npos) return f;
    start = colon + 1;
  }
}

// The fields of the first line of `file` whose third field is `id`, with at
// least `count` fields; empty when none.
std::vector<std::string> entry(const char* file, unsigned id, size_t count) {
  std::ifstream in(file);
  const std::string wanted = std::to_string(id);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = fields(line);
    if (f.size() >= count && f[2] == wanted && !f[0].empty()) return f;
  }
  return {};
}

} // namespace

std::optional<User> user(uid_t uid, const char* passwd_file) {
  std::vector<std::string> f = entry(passwd_file, uid, 7);
  if (f.empty()) return std::nullopt;
  return User{f[0], f[5]};
}

std::string group_name(gid_t gid, const char* group_file) {
  std::vector<std::string> f = entry(group_file, gid, 3);
  return f.empty() ? "" : f[0];
}

std::string effective_user_name() {
  if (std::optional<User> u = user(geteuid())) return u->name;
  const char* env = std::getenv("USER");
  return env ? env : "";
}

} // namespace simba::backend::accounts
