// MD5 after RFC 1321's description (md5.hpp).
#include "backend/postgres/md5.hpp"

#include <array>
#include <cmath>
#include <cstdint>

namespace simba::backend::pg {
namespace {

// K[i] = floor(|sin(i + 1)| * 2^32), as the RFC defines the table.
std::array<uint32_t, 64> sine_table() {
  std::array<uint32_t, 64> k{};
  for (int i = 0; i < 64; ++i)
    k[i] = static_cast<uint32_t>(std::floor(std::fabs(std::sin(i + 1.0)) * 4294967296.0));
  return k;
}

constexpr int k_shift[4][4] = {{7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}};

uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

void block(std::array<uint32_t, 4>& h, const unsigned char* p) {
  static const std::array<uint32_t, 64> k = sine_table();
  uint32_t m[16];
  for (int i = 0; i < 16; ++i)
    m[i] = uint32_t(p[4 * i]) | uint32_t(p[4 * i + 1]) << 8 | uint32_t(p[4 * i + 2]) << 16 |
           uint32_t(p[4 * i + 3]) << 24;
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
  for (int i = 0; i < 64; ++i) {
    uint32_t f;
    int g;
    switch (i / 16) {
    case 0: f = (b & c) | (~b & d), g = i; break;
    case 1: f = (d & b) | (~d & c), g = (5 * i + 1) % 16; break;
    case 2: f = b ^ c ^ d, g = (3 * i + 5) % 16; break;
    default: f = c ^ (b | ~d), g = (7 * i) % 16; break;
    }
    f += a + k[i] + m[g];
    a = d;
    d = c;
    c = b;
    b += rotl(f, k_shift[i / 16][i % 4]);
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d;
}

} // namespace

std::string md5_hex(const std::string& data) {
  std::array<uint32_t, 4> h = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
  std::string msg = data;
  msg.push_back(static_cast<char>(0x80));
  while (msg.size() % 64 != 56) msg.push_back('\0');
  uint64_t bits = uint64_t(data.size()) * 8;
  for (int i = 0; i < 8; ++i) msg.push_back(static_cast<char>(bits >> (8 * i)));
  for (size_t at = 0; at < msg.size(); at += 64)
    block(h, reinterpret_cast<const unsigned char*>(msg.data() + at));
  static const char* const digits = "0123456789abcdef";
  std::string out;
  for (uint32_t w : h)
    for (int i = 0; i < 4; ++i) {
      unsigned byte = (w >> (8 * i)) & 0xff;
      out.push_back(digits[byte >> 4]);
      out.push_back(digits[byte & 15]);
    }
  return out;
}

std::string md5_password(const std::string& password, const std::string& user,
                         const std::string& salt) {
  return "md5" + md5_hex(md5_hex(password + user) + salt);
}

} // namespace simba::backend::pg
