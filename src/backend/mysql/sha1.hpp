#pragma once
// SHA-1 (FIPS 180-4), simba's own: mysql_native_password's scramble needs
// nothing else from a crypto library, and simba loads none for it (no
// dlopen of system libraries: README.md). Not for anything that needs
// SHA-1 to resist collisions; the scramble does not.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace simba::backend::mysql {

using Sha1Digest = std::array<uint8_t, 20>;

class Sha1 {
public:
  Sha1();
  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  Sha1Digest finish(); // the object is spent afterwards
  static Sha1Digest of(std::string_view s);

private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 5> m_state;
  std::array<uint8_t, 64> m_block{};
  size_t m_used = 0;
  uint64_t m_total = 0;
};

// mysql_native_password's answer to the server's 20-byte `scramble`:
// SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))); "" for an
// empty password (the protocol sends no answer then).
std::string native_password_scramble(std::string_view password, std::string_view scramble);

} // namespace simba::backend::mysql
