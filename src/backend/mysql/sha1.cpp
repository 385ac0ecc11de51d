// SHA-1 (sha1.hpp), written from FIPS 180-4 §6.1.
#include "backend/mysql/sha1.hpp"

#include <algorithm>
#include <cstring>

namespace simba::backend::mysql {
namespace {

uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

} // namespace

Sha1::Sha1() : m_state{0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u} {}

void Sha1::compress(const uint8_t* p) {
  uint32_t w[80];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 |
           uint32_t(p[4 * i + 3]);
  for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = m_state[0], b = m_state[1], c = m_state[2], d = m_state[3], e = m_state[4];
  for (int i = 0; i < 80; ++i) {
    uint32_t f, k;
    if (i < 20) {
      f = (b & c) | (~b & d);
      k = 0x5A827999u;
    } else if (i < 40) {
      f = b ^ c ^ d;
      k = 0x6ED9EBA1u;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8F1BBCDCu;
    } else {
      f = b ^ c ^ d;
      k = 0xCA62C1D6u;
    }
    uint32_t t = rotl(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = rotl(b, 30);
    b = a;
    a = t;
  }
  m_state[0] += a;
  m_state[1] += b;
  m_state[2] += c;
  m_state[3] += d;
  m_state[4] += e;
}

void Sha1::update(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  m_total += size;
  while (size > 0) {
    size_t take = std::min(size, m_block.size() - m_used);
    std::memcpy(m_block.data() + m_used, p, take);
    m_used += take;
    p += take;
    size -= take;
    if (m_used == m_block.size()) {
      compress(m_block.data());
      m_used = 0;
    }
  }
}

Sha1Digest Sha1::finish() {
  uint64_t bits = m_total * 8;
  uint8_t pad = 0x80;
  update(&pad, 1);
  uint8_t zero = 0;
  while (m_used != 56) update(&zero, 1);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  update(len, 8);
  Sha1Digest out;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(m_state[i] >> (24 - 8 * j));
  return out;
}

Sha1Digest Sha1::of(std::string_view s) {
  Sha1 h;
  h.update(s);
  return h.finish();
}

std::string native_password_scramble(std::string_view password, std::string_view scramble) {
  if (password.empty()) return "";
  Sha1Digest stage1 = Sha1::of(password);
  Sha1Digest stage2 = Sha1::of({reinterpret_cast<const char*>(stage1.data()), stage1.size()});
  Sha1 h;
  h.update(scramble);
  h.update(stage2.data(), stage2.size());
  Sha1Digest mix = h.finish();
  std::string out(20, '\0');
  for (size_t i = 0; i < 20; ++i) out[i] = static_cast<char>(stage1[i] ^ mix[i]);
  return out;
}

} // namespace simba::backend::mysql
