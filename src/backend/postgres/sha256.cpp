// SHA-256 and HMAC-SHA-256 (sha256.hpp), written from FIPS 180-4 §4.1.2,
// §4.2.2, §5.1.1, §5.3.3, §6.2 and RFC 2104 §2.
#include "backend/postgres/sha256.hpp"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

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
  uint32_t v;
  std::memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}
inline void store_be(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 24), p[1] = uint8_t(v >> 16), p[2] = uint8_t(v >> 8), p[3] = uint8_t(v);
}

// One round of §6.2.2 step 3, written so that the eight working variables
// need not move: the caller rotates their names instead (8 rounds a loop).
inline void round(uint32_t a, uint32_t b, uint32_t c, uint32_t& d, uint32_t e, uint32_t f,
                  uint32_t g, uint32_t& h, uint32_t k_plus_w) {
  uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + k_plus_w;
  uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
  d += t1;
  h = t1 + t2;
}

using State = std::array<uint32_t, 8>;

// §6.2.2: one block, as 16 words, into the state.
void compress_words(State& state, const uint32_t* block) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t) w[t] = block[t];
  for (int t = 16; t < 64; ++t) {
    uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
  for (int t = 0; t < 64; t += 8) {
    round(a, b, c, d, e, f, g, h, k_round[t] + w[t]);
    round(h, a, b, c, d, e, f, g, k_round[t + 1] + w[t + 1]);
    round(g, h, a, b, c, d, e, f, k_round[t + 2] + w[t + 2]);
    round(f, g, h, a, b, c, d, e, k_round[t + 3] + w[t + 3]);
    round(e, f, g, h, a, b, c, d, k_round[t + 4] + w[t + 4]);
    round(d, e, f, g, h, a, b, c, k_round[t + 5] + w[t + 5]);
    round(c, d, e, f, g, h, a, b, k_round[t + 6] + w[t + 6]);
    round(b, c, d, e, f, g, h, a, k_round[t + 7] + w[t + 7]);
  }
  state[0] += a, state[1] += b, state[2] += c, state[3] += d;
  state[4] += e, state[5] += f, state[6] += g, state[7] += h;
}

void compress_portable(State& state, const uint8_t* block) {
  uint32_t w[16];
  for (int t = 0; t < 16; ++t) w[t] = load_be(block + 4 * t);
  compress_words(state, w);
}

// HMAC's rounds on a 32-byte message (chain()): the message, then the
// padding of a 96-byte whole (one block of pad before it): 768 bits.
State chain_portable(const State& inner, const State& outer, const State& u1, int count) {
  uint32_t block[16] = {};
  block[8] = 0x80000000;
  block[15] = 768;
  State u = u1, acc = u1;
  for (int i = 1; i < count; ++i) {
    std::copy(u.begin(), u.end(), block);
    State s = inner;
    compress_words(s, block);
    std::copy(s.begin(), s.end(), block);
    u = outer;
    compress_words(u, block);
    for (int k = 0; k < 8; ++k) acc[k] ^= u[k];
  }
  return acc;
}

#if defined(__x86_64__)
// The same on x86's SHA extensions (SHA-NI: Intel since Goldmont and Ice
// Lake, AMD since Zen), several times faster: sha256rnds2 does two rounds
// on the state split as ABEF and CDGH, sha256msg1/msg2 the message
// schedule's sigma0 and sigma1 parts, four words at a time.
#define SIMBA_SHA_NI __attribute__((target("sha,sse4.1,ssse3")))

// The state, lanes A B C D and E F G H, as the instructions hold it:
// ABEF (lanes F E B A) and CDGH (lanes H G D C).
SIMBA_SHA_NI inline void to_abef(__m128i abcd, __m128i efgh, __m128i& abef, __m128i& cdgh) {
  abcd = _mm_shuffle_epi32(abcd, 0xB1); // lanes B A D C
  efgh = _mm_shuffle_epi32(efgh, 0x1B); // lanes H G F E
  abef = _mm_alignr_epi8(abcd, efgh, 8);
  cdgh = _mm_blend_epi16(efgh, abcd, 0xF0);
}
SIMBA_SHA_NI inline void from_abef(__m128i abef, __m128i cdgh, __m128i& abcd, __m128i& efgh) {
  __m128i fe_ba = _mm_shuffle_epi32(abef, 0x1B); // lanes A B E F
  __m128i dc_hg = _mm_shuffle_epi32(cdgh, 0xB1); // lanes G H C D
  abcd = _mm_blend_epi16(fe_ba, dc_hg, 0xF0);
  efgh = _mm_alignr_epi8(dc_hg, fe_ba, 8);
}

// One block, W[0..15] in w (lane 0 first), into the state.
SIMBA_SHA_NI inline void compress_registers(__m128i& abef, __m128i& cdgh, __m128i w[4]) {
  const __m128i abef_in = abef, cdgh_in = cdgh;
  // Unrolled, so that w[] and the state stay in registers.
#pragma GCC unroll 16
  for (int g = 0; g < 16; ++g) { // W[4g..4g+3] replaces W[4g-16..4g-13] in w[g % 4]
    __m128i& cur = w[g % 4];
    if (g >= 4) { // W[t] = sigma1(W[t-2]) + W[t-7] + sigma0(W[t-15]) + W[t-16]
      const __m128i &w8 = w[(g + 2) % 4], &w4 = w[(g + 3) % 4];
      __m128i x = _mm_sha256msg1_epu32(cur, w[(g + 1) % 4]);
      x = _mm_add_epi32(x, _mm_alignr_epi8(w4, w8, 4));
      cur = _mm_sha256msg2_epu32(x, w4);
    }
    __m128i kw =
        _mm_add_epi32(cur, _mm_loadu_si128(reinterpret_cast<const __m128i*>(&k_round[4 * g])));
    cdgh = _mm_sha256rnds2_epu32(cdgh, abef, kw); // now the new ABEF
    abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(kw, 0x0E));
  }
  abef = _mm_add_epi32(abef, abef_in);
  cdgh = _mm_add_epi32(cdgh, cdgh_in);
}

SIMBA_SHA_NI inline void load(const State& s, __m128i& abcd, __m128i& efgh) {
  abcd = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&s[0]));
  efgh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&s[4]));
}
SIMBA_SHA_NI inline void store(State& s, __m128i abcd, __m128i efgh) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&s[0]), abcd);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&s[4]), efgh);
}

// The same as compress_portable() on x86's SHA extensions (SHA-NI: Intel
// since Goldmont and Ice Lake, AMD since Zen): sha256rnds2 does two rounds,
// sha256msg1/msg2 the message schedule's sigma0 and sigma1 parts, four
// words at a time.
SIMBA_SHA_NI void compress_sha_ni(State& state, const uint8_t* block) {
  const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i abcd, efgh, abef, cdgh, w[4];
  load(state, abcd, efgh);
  to_abef(abcd, efgh, abef, cdgh);
  for (int i = 0; i < 4; ++i)
    w[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * i)),
                            byte_swap);
  compress_registers(abef, cdgh, w);
  from_abef(abef, cdgh, abcd, efgh);
  store(state, abcd, efgh);
}

// chain_portable() in registers: no round trip through memory a round.
SIMBA_SHA_NI State chain_sha_ni(const State& inner, const State& outer, const State& u1,
                                int count) {
  __m128i in_abef, in_cdgh, out_abef, out_cdgh, u_lo, u_hi;
  load(inner, u_lo, u_hi);
  to_abef(u_lo, u_hi, in_abef, in_cdgh);
  load(outer, u_lo, u_hi);
  to_abef(u_lo, u_hi, out_abef, out_cdgh);
  load(u1, u_lo, u_hi);
  __m128i acc_lo = u_lo, acc_hi = u_hi;
  const __m128i pad_lo = _mm_set_epi32(0, 0, 0, int(0x80000000)),
                pad_hi = _mm_set_epi32(768, 0, 0, 0);
  for (int i = 1; i < count; ++i) {
    __m128i w[4] = {u_lo, u_hi, pad_lo, pad_hi};
    __m128i abef = in_abef, cdgh = in_cdgh;
    compress_registers(abef, cdgh, w);
    from_abef(abef, cdgh, w[0], w[1]);
    w[2] = pad_lo, w[3] = pad_hi;
    abef = out_abef, cdgh = out_cdgh;
    compress_registers(abef, cdgh, w);
    from_abef(abef, cdgh, u_lo, u_hi);
    acc_lo = _mm_xor_si128(acc_lo, u_lo);
    acc_hi = _mm_xor_si128(acc_hi, u_hi);
  }
  State acc;
  store(acc, acc_lo, acc_hi);
  return acc;
}

bool cpu_has_sha_ni() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3)) return false;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
}
#endif

// The two implementations of the two hot functions.
struct Implementation {
  void (*compress)(State&, const uint8_t*);
  State (*chain)(const State& inner, const State& outer, const State& u1, int count);
};
constexpr Implementation k_portable{compress_portable, chain_portable};
#if defined(__x86_64__)
constexpr Implementation k_sha_ni{compress_sha_ni, chain_sha_ni};
#endif

Implementation& chosen() {
#if defined(__x86_64__)
  static Implementation impl = cpu_has_sha_ni() ? k_sha_ni : k_portable;
#else
  static Implementation impl = k_portable;
#endif
  return impl;
}

inline void compress(State& state, const uint8_t* block) { chosen().compress(state, block); }

Digest output(const State& h) {
  Digest d;
  for (int i = 0; i < 8; ++i) store_be(d.data() + 4 * i, h[i]);
  return d;
}

} // namespace

bool use_sha_instructions(bool wanted) {
#if defined(__x86_64__)
  chosen() = wanted && cpu_has_sha_ni() ? k_sha_ni : k_portable;
  return chosen().chain == chain_sha_ni;
#else
  (void)wanted;
  return false;
#endif
}

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
  Sha256 outer = m_outer;
  outer.update(as_bytes(inner.finish()));
  return outer.finish();
}

Digest HmacSha256::chain(const Digest& u1, int count) const {
  State u;
  for (int i = 0; i < 8; ++i) u[i] = load_be(u1.data() + 4 * i);
  return output(chosen().chain(m_inner.m_state, m_outer.m_state, u, count));
}

} // namespace simba::backend::pg
