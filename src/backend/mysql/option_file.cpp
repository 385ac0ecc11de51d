// The [client] password of a MySQL option file (option_file.hpp).
#include "backend/mysql/option_file.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace simba::backend::mysql {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::string lower_dashes(std::string s) {
  for (char& c : s) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A value as the mysql client reads it: quoted ('...' or "...", its
// escapes \b \t \n \r \s \\ and the quote), else up to a '#' comment.
std::string read_value(const std::string& raw) {
  std::string v = trim(raw);
  if (v.size() >= 2 && (v[0] == '\'' || v[0] == '"')) {
    const char q = v[0];
    std::string out;
    for (size_t i = 1; i < v.size(); ++i) {
      if (v[i] == q) return out;
      if (v[i] == '\\' && i + 1 < v.size()) {
        const char e = v[++i];
        out += e == 'b' ? '\b' : e == 't' ? '\t' : e == 'n' ? '\n' : e == 'r' ? '\r'
               : e == 's' ? ' ' : e;
      } else {
        out += v[i];
      }
    }
    return out; // no closing quote: the rest of the line
  }
  if (size_t hash = v.find('#'); hash != std::string::npos) v = trim(v.substr(0, hash));
  return v;
}

// Why `st` (the file at `path`) must not be read; "" when it may.
std::string unsafe(const std::string& path, const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return path + " is not a regular file";
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return path + " may be written by " + ((st.st_mode & S_IWOTH) ? "everyone" : "its group") +
           " (chmod go-w it)";
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return path + " belongs to another user (uid " + std::to_string(st.st_uid) + ")";
  return "";
}

} // namespace

std::optional<std::string> client_password(const std::string& text) {
  std::optional<std::string> found;
  bool in_client = false;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = trim(text.substr(at, end - at));
    at = end + 1;
    if (line.empty() || line[0] == '#' || line[0] == ';' || line[0] == '!') continue;
    if (line[0] == '[') {
      size_t close = line.find(']');
      in_client = close != std::string::npos && lower_dashes(trim(line.substr(1, close - 1))) == "client";
      continue;
    }
    if (!in_client) continue;
    size_t eq = line.find('=');
    if (lower_dashes(trim(line.substr(0, eq))) != "password") continue;
    // "password" alone asks the mysql client to prompt: nothing for simba.
    found = eq == std::string::npos ? std::nullopt : std::optional(read_value(line.substr(eq + 1)));
  }
  return found;
}

std::string apply_option_file(MysqlUri& uri) {
  if (!uri.password.empty()) return "";
  const bool named = !uri.option_file.empty();
  std::string path = uri.option_file;
  // What a refused login says when no password was found anywhere.
  uri.password_note = std::string("no password: give it in ") + k_mysql_password_env +
                      " or the [client] group of ~/.my.cnf";
  if (!named) {
    const char* home = std::getenv("HOME");
    if (!home || !*home) return "";
    path = std::string(home) + "/.my.cnf";
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    if (!named && errno == ENOENT) return "";
    std::string why = path + ": " + std::strerror(errno);
    if (named) return "cannot read the option file " + why;
    uri.password_note = why;
    return "";
  }
  // The file opened is the file judged (fstat, not a second lookup).
  struct stat st {};
  std::string why = ::fstat(fd, &st) != 0 ? path + ": " + std::strerror(errno) : unsafe(path, st);
  std::string text;
  char buf[4096];
  for (ssize_t n; why.empty() && text.size() < (1u << 20) &&
                  (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) why = path + ": " + std::strerror(errno);
    else text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!why.empty()) {
    if (named) return "the option file " + why + ": not read";
    uri.password_note = why + ": not read";
    return "";
  }
  std::optional<std::string> password = client_password(text);
  if (!password || password->empty()) {
    uri.password_note = path + " has no password in [client]";
    return "";
  }
  uri.password = *password;
  uri.secrets.push_back(*password);
  uri.password_note = "the password came from " + path;
  return "";
}

} // namespace simba::backend::mysql
