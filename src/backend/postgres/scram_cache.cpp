// The per-user cache of SCRAM keys (scram_cache.hpp): its file, read and
// written with the SQLite backend's rules for files others might have
// planted (no link followed, owner and mode checked on the open file).
#include "backend/postgres/scram_cache.hpp"

#include "backend/postgres/base64.hpp"
#include "backend/postgres/sha256.hpp"
#include "sys/fd.hpp"

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

namespace simba::backend::pg::scram_cache {
namespace {

constexpr const char* k_file = "scram-keys";
constexpr const char* k_header =
    "# simba's SCRAM keys: not the password, but they log in as you to the server they name "
    "(docs/backends/postgres.md, \"The SCRAM key cache\")\n";
constexpr size_t k_max_lines = 64;      // servers and users; the oldest go first
constexpr off_t k_max_size = 64 * 1024; // larger is not ours: ignored
constexpr size_t k_id_digits = 16;      // of the server-and-user id

struct Line {
  std::string id;  // the server and user
  std::string key; // and the salt and iteration count
  std::string text;
};

std::string hex(const Digest& d, size_t digits) {
  static const char* k_digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < d.size() && out.size() < digits; ++i)
    out += k_digits[d[i] >> 4], out += k_digits[d[i] & 15];
  return out.substr(0, digits);
}

std::string server_and_user(const CacheKey& k) {
  return k.host + '\0' + std::to_string(k.port) + '\0' + k.user;
}
std::string id_of(const CacheKey& k) { return hex(Sha256::of(server_and_user(k)), k_id_digits); }
std::string key_of(const CacheKey& k) {
  return hex(Sha256::of(server_and_user(k) + '\0' + k.salt + '\0' + std::to_string(k.iterations)),
             64);
}

// Ours alone: the effective user's, and no one else may write it (a
// directory) or read or write it (the file).
bool ours(const struct stat& st, mode_t others_may_not) {
  return st.st_uid == geteuid() && (st.st_mode & others_may_not) == 0;
}

// mkdir -p, 0700 for each directory made; the ones there stay as they are
// (and are judged by open_directory()).
void make_directories(const std::string& dir) {
  for (size_t next = dir.find('/', 1);; next = dir.find('/', next + 1)) {
    std::string prefix = dir.substr(0, next);
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return;
    if (next == std::string::npos) return;
  }
}

// The cache's directory, checked; invalid when it is not ours alone.
sys::Fd open_directory(bool create) {
  std::string dir = directory();
  if (dir.empty()) return {};
  if (create) make_directories(dir);
  sys::Fd fd(open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (!fd || fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode) || !ours(st, S_IWGRP | S_IWOTH))
    return {};
  return fd;
}

// The file's lines, when it is a file we trust; nothing otherwise.
std::vector<Line> read_lines(int dir_fd) {
  sys::Fd fd(openat(dir_fd, k_file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat st;
  if (!fd || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > k_max_size ||
      !ours(st, S_IRWXG | S_IRWXO))
    return {};
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = read(fd.get(), text.data() + got, text.size() - got);
    if (n <= 0) return {};
    got += static_cast<size_t>(n);
  }
  std::vector<Line> lines;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) break; // a line without its end: cut short
    std::string line = text.substr(start, end - start);
    start = end + 1;
    size_t a = line.find(' '), b = line.find(' ', a + 1);
    if (line.empty() || line[0] == '#' || a != k_id_digits || b != a + 65) continue;
    lines.push_back(Line{line.substr(0, a), line.substr(a + 1, 64), line});
  }
  return lines;
}

// "<ClientKey> <ServerKey>" in base64, as a line ends.
std::optional<scram::Keys> parse_keys(const std::string& text) {
  size_t space = text.find(' ');
  if (space == std::string::npos) return std::nullopt;
  auto client = base64_decode(text.substr(0, space));
  auto server = base64_decode(text.substr(space + 1));
  scram::Keys keys;
  if (!client || !server || client->size() != 32 || server->size() != 32) return std::nullopt;
  std::copy(client->begin(), client->end(), keys.client_key.begin());
  std::copy(server->begin(), server->end(), keys.server_key.begin());
  return keys;
}

// Writes `text` to a new file beside the cache and renames it over the
// cache: a reader sees the old file or the new one, never half of one. Not
// fsync'ed: after a crash the file may be empty or cut, which is a miss.
void replace_file(int dir_fd, const std::string& text) {
  std::string temp = std::string(k_file) + ".tmp." + std::to_string(getpid());
  unlinkat(dir_fd, temp.c_str(), 0); // left by a crashed process of the same pid
  sys::Fd fd(openat(dir_fd, temp.c_str(),
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600));
  if (!fd) return;
  bool ok = fchmod(fd.get(), 0600) == 0; // whatever the umask
  for (size_t done = 0; ok && done < text.size();) {
    ssize_t n = write(fd.get(), text.data() + done, text.size() - done);
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = fd.close() && ok;
  if (!ok || renameat(dir_fd, temp.c_str(), dir_fd, k_file) != 0) unlinkat(dir_fd, temp.c_str(), 0);
}

} // namespace

std::string directory() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/')
    return std::string(x) + "/simba";
  if (const char* h = std::getenv("HOME"); h && h[0] == '/')
    return std::string(h) + "/.cache/simba";
  return {};
}

std::optional<scram::Keys> load(const CacheKey& key) {
  sys::Fd dir = open_directory(false);
  if (!dir) return std::nullopt;
  const std::string wanted = key_of(key);
  for (const Line& line : read_lines(dir.get()))
    if (line.key == wanted) return parse_keys(line.text.substr(k_id_digits + 1 + 64 + 1));
  return std::nullopt;
}

void store(const CacheKey& key, const scram::Keys& keys) {
  sys::Fd dir = open_directory(true);
  if (!dir) return;
  const std::string id = id_of(key);
  std::vector<std::string> kept;
  for (const Line& line : read_lines(dir.get()))
    if (line.id != id) kept.push_back(line.text);
  if (kept.size() >= k_max_lines) kept.erase(kept.begin(), kept.end() - (k_max_lines - 1));
  std::string text = k_header;
  for (const std::string& line : kept) text += line + '\n';
  text += id + ' ' + key_of(key) + ' ' +
          base64_encode({reinterpret_cast<const char*>(keys.client_key.data()), 32}) + ' ' +
          base64_encode({reinterpret_cast<const char*>(keys.server_key.data()), 32}) + '\n';
  replace_file(dir.get(), text);
}

} // namespace simba::backend::pg::scram_cache
