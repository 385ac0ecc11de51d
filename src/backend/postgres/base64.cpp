// Base64 (base64.hpp).
#include "backend/postgres/base64.hpp"

#include <cstdint>

namespace simba::backend::pg {
namespace {

constexpr char k_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int value_of(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

} // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (n > 1) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    if (n > 2) v |= uint8_t(bytes[i + 2]);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? k_alphabet[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    bool last = i + 4 == text.size();
    size_t pad = 0;
    if (last) pad = (text[i + 3] == '=') + (text[i + 3] == '=' && text[i + 2] == '=');
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      int d = k < 4 - pad ? value_of(text[i + k]) : 0;
      if (d < 0) return std::nullopt;
      v = v << 6 | uint32_t(d);
    }
    out += char(v >> 16);
    if (pad < 2) out += char(v >> 8 & 0xff);
    if (pad < 1) out += char(v & 0xff);
  }
  return out;
}

} // namespace simba::backend::pg
