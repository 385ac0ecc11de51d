#include "core/names.hpp"

#include "core/error.hpp"

#include <cstdio>

namespace simba::core {

namespace {

// For an error message: escaped, and cut after 40 bytes.
std::string printable(std::string_view s) {
  return escape_control(s.substr(0, 40)) + (s.size() > 40 ? "..." : "");
}

} // namespace

void validate_mutex_name(std::string_view name) {
  if (name.empty()) throw UsageError("mutex name is empty");
  if (name.size() > k_max_name) {
    throw UsageError("mutex name is longer than 128 bytes: '" + printable(name) + "'");
  }
  for (unsigned char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '/' || c == '@' || c == '-';
    if (!ok) {
      throw UsageError("invalid mutex name '" + printable(name) +
                       "': only letters, digits and . _ : / @ - are allowed");
    }
  }
}

void validate_contender_id(std::string_view id) {
  if (id.empty()) throw UsageError("contender id is empty");
  if (id.size() > k_max_name) throw UsageError("contender id is longer than 128 bytes");
  for (unsigned char c : id) {
    if (c <= 0x20 || c >= 0x7f) {
      throw UsageError("invalid contender id '" + printable(id) +
                       "': printable characters without spaces only");
    }
  }
}

std::string escape_control(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

std::string unescape_control(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
    } else if (i + 1 < s.size() && s[i + 1] == '\\') {
      out += '\\';
      ++i;
    } else if (i + 3 < s.size() && s[i + 1] == 'x' && hex(s[i + 2]) >= 0 && hex(s[i + 3]) >= 0) {
      out += char(hex(s[i + 2]) * 16 + hex(s[i + 3]));
      i += 3;
    } else {
      throw UsageError("invalid escape in '" + escape_control(s) + "': use \\xNN or \\\\");
    }
  }
  return out;
}

std::string make_contender_id(long pid, std::string_view host, uint32_t nonce) {
  char tail[16];
  snprintf(tail, sizeof tail, "#%08x", nonce);
  std::string head = std::to_string(pid) + "@";
  size_t room = k_max_name - head.size() - std::string_view(tail).size();
  std::string h;
  for (unsigned char c : host.substr(0, room)) h += (c > 0x20 && c < 0x7f) ? char(c) : '_';
  if (h.empty()) h = "localhost";
  return head + h + tail;
}

} // namespace simba::core
