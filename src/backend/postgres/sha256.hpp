#pragma once
// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), simba's own: SCRAM
// needs nothing else from a crypto library, and simba loads none for it
// (issue 33: no dlopen of system libraries for PostgreSQL). HmacSha256
// keeps its key's inner and outer pads hashed once, so that each of
// PBKDF2's thousands of rounds costs two compressions and nothing more
// (chain(): on x86's SHA instructions, without leaving the registers).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace simba::backend::pg {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  Digest finish(); // the object is spent afterwards
  static Digest of(std::string_view s);

private:
  friend class HmacSha256; // its chain() starts from the pads' states
  std::array<uint32_t, 8> m_state;
  std::array<uint8_t, 64> m_block{};
  size_t m_used = 0;    // bytes in m_block
  uint64_t m_total = 0; // bytes hashed
};

class HmacSha256 {
public:
  explicit HmacSha256(std::string_view key);
  Digest mac(std::string_view message) const;
  // PBKDF2's F (RFC 8018 §5.2) from its first U: U1 ^ U2 ^ ... ^ Ucount,
  // where U(i+1) = mac(Ui). Two compressions a round.
  Digest chain(const Digest& u1, int count) const;

private:
  Sha256 m_inner; // after the key XOR ipad block
  Sha256 m_outer; // after the key XOR opad block
};

// Whether the CPU's SHA instructions are used (x86's SHA extensions, found
// at the first hash; the portable code otherwise). Tests turn them off to
// check the portable code too. Returns whether they are used now.
bool use_sha_instructions(bool wanted);

inline std::string_view as_bytes(const Digest& d) {
  return {reinterpret_cast<const char*>(d.data()), d.size()};
}

} // namespace simba::backend::pg
