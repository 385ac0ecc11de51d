#include "core/names.hpp"

#include "core/error.hpp"

#include <cstdio>

namespace simba::core {

namespace {

std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 40)) {
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > 40) out += "...";
  return out;
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
