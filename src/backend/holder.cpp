// A Holder as one string (holder.hpp).
#include "backend/holder.hpp"

#include <cstdlib>

namespace simba::backend {
namespace {

std::string without_tabs(std::string s) {
  for (char& c : s)
    if (c == '\t') c = '_';
  return s;
}

} // namespace

std::string encode_holder(const Holder& h) {
  return without_tabs(h.via) + '\t' + std::to_string(h.pid) + '\t' + without_tabs(h.host) + '\t' +
         h.command;
}

std::optional<Holder> decode_holder(const std::string& s) {
  size_t a = s.find('\t');
  size_t b = a == std::string::npos ? a : s.find('\t', a + 1);
  size_t c = b == std::string::npos ? b : s.find('\t', b + 1);
  if (c == std::string::npos) return std::nullopt;
  Holder h;
  h.via = s.substr(0, a);
  std::string pid = s.substr(a + 1, b - a - 1);
  char* end = nullptr;
  h.pid = std::strtol(pid.c_str(), &end, 10);
  if (pid.empty() || *end != '\0') return std::nullopt;
  h.host = s.substr(b + 1, c - b - 1);
  h.command = s.substr(c + 1);
  return h;
}

} // namespace simba::backend
