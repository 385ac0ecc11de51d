// SHA-256 and HMAC-SHA-256 (sha256.hpp), written from FIPS 180-4 §4.1.2,
// §4.2.2, §5.1.1, §5.3.3, §6.2 and RFC 2104 §2.
#include "backend/postgres/sha256.hpp"

#include <cstring>

namespace simba::backend::pg {
namespace {

// FIPS 180-4 §4.2.2: the first 32 bits of the fractional parts of the cube
// roots of the first 64 primes.
constexpr uint32_t k_round[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

// §5.3.3: the first 32 bits of the fractional parts of the square roots of
// the first 8 primes.
constexpr std::array<uint32_t, 8> k_initial = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

inline uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
inline uint32_t load_be(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}
inline void store_be(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 24), p[1] = uint8_t(v >> 16), p[2] = uint8_t(v >> 8), p[3] = uint8_t(v);
}

// §6.2.2: one 64-byte block into the state.
void compress(std::array<uint32_t, 8>& h, const uint8_t* block) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t) w[t] = load_be(block + 4 * t);
  for (int t = 16; t < 64; ++t) {
    uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < 64; ++t) {
    uint32_t t1 =
        hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + k_round[t] + w[t];
    uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

Digest output(const std::array<uint32_t, 8>& h) {
  Digest d;
  for (int i = 0; i < 8; ++i) store_be(d.data() + 4 * i, h[i]);
  return d;
}

} // namespace

Sha256::Sha256() : m_state(k_initial) {}

void Sha256::update(const void* data, size_t size) {
  auto p = static_cast<const uint8_t*>(data);
  m_total += size;
  while (size > 0) {
    if (m_used == 0 && size >= 64) { // whole blocks straight from the input
      compress(m_state, p);
      p += 64, size -= 64;
      continue;
    }
    size_t n = std::min(size, 64 - m_used);
    std::memcpy(m_block.data() + m_used, p, n);
    m_used += n, p += n, size -= n;
    if (m_used == 64) compress(m_state, m_block.data()), m_used = 0;
  }
}

// §5.1.1: a 1 bit, zeros, and the length in bits as 64 bits big-endian.
Digest Sha256::finish() {
  uint64_t bits = m_total * 8;
  m_block[m_used++] = 0x80;
  if (m_used > 56) {
    std::memset(m_block.data() + m_used, 0, 64 - m_used);
    compress(m_state, m_block.data());
    m_used = 0;
  }
  std::memset(m_block.data() + m_used, 0, 56 - m_used);
  for (int i = 0; i < 8; ++i) m_block[56 + i] = uint8_t(bits >> (56 - 8 * i));
  compress(m_state, m_block.data());
  return output(m_state);
}

Digest Sha256::of(std::string_view s) {
  Sha256 h;
  h.update(s);
  return h.finish();
}

// The padded block of a 32-byte message after one 64-byte block: 96 bytes
// in all, 768 bits.
Digest Sha256::finish_after_pad(const Digest& message) const {
  uint8_t block[64] = {};
  std::memcpy(block, message.data(), 32);
  block[32] = 0x80;
  block[62] = 768 >> 8;
  block[63] = 768 & 0xff;
  std::array<uint32_t, 8> h = m_state;
  compress(h, block);
  return output(h);
}

// RFC 2104 §2: a key longer than the block is hashed first; then
// H(K ^ opad, H(K ^ ipad, text)). The two padded keys are one block each,
// hashed here once.
HmacSha256::HmacSha256(std::string_view key) {
  uint8_t k[64] = {};
  if (key.size() > 64) {
    Digest d = Sha256::of(key);
    std::memcpy(k, d.data(), d.size());
  } else {
    std::memcpy(k, key.data(), key.size());
  }
  uint8_t pad[64];
  for (int i = 0; i < 64; ++i) pad[i] = k[i] ^ 0x36;
  m_inner.update(pad, 64);
  for (int i = 0; i < 64; ++i) pad[i] = k[i] ^ 0x5c;
  m_outer.update(pad, 64);
}

Digest HmacSha256::mac(std::string_view message) const {
  Sha256 inner = m_inner;
  inner.update(message);
  return m_outer.finish_after_pad(inner.finish());
}

Digest HmacSha256::mac(const Digest& message) const {
  return m_outer.finish_after_pad(m_inner.finish_after_pad(message));
}

} // namespace simba::backend::pg
