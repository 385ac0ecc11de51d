#pragma once
// The MySQL client/server protocol's bytes (no I/O): packets (a 3-byte
// length, a sequence number, the payload), the little-endian integers and
// length-encoded numbers and strings inside them, and the server's OK and
// ERR packets. A Reader never reads past its payload: a short or broken
// packet leaves it not ok(), never a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace simba::backend::mysql::wire {

// Capability flags (the protocol's CLIENT_*), those simba speaks or reads.
enum : uint32_t {
  k_long_password = 1u,
  k_found_rows = 2u,
  k_long_flag = 4u,
  k_connect_with_db = 8u,
  k_protocol_41 = 0x200u,
  k_ssl = 0x800u,
  k_transactions = 0x2000u,
  k_secure_connection = 0x8000u,
  k_multi_statements = 0x10000u,
  k_multi_results = 0x20000u,
  k_plugin_auth = 0x80000u,
  k_plugin_auth_lenenc_data = 0x200000u,
};
// The status flag that says another result follows (multi-statements).
constexpr uint16_t k_more_results = 0x0008;
// A packet of 16 MiB - 1 bytes would continue in the next: simba never
// sends one, and refuses one from the server (no answer of simba's is big).
constexpr size_t k_max_payload = 0xffffff - 1;

// One packet's header put before `payload`.
std::string packet(uint8_t sequence, std::string_view payload);
void put_u16(std::string& out, uint16_t v);
void put_u32(std::string& out, uint32_t v);
void put_lenenc(std::string& out, uint64_t v);

class Reader {
public:
  explicit Reader(std::string_view payload) : m_in(payload) {}
  bool ok() const { return m_ok; }
  bool done() const { return m_at >= m_in.size(); }
  uint8_t u8();
  uint16_t u16();
  uint32_t u32();
  uint64_t lenenc();
  std::string bytes(size_t n);
  std::string nul_string(); // up to a NUL (taken), or to the end
  std::string rest();
  // A length-encoded string, or NULL (0xfb): `null` says which.
  std::string lenenc_string(bool& null);

private:
  std::string_view m_in;
  size_t m_at = 0;
  bool m_ok = true;
};

// An ERR packet (0xff) as one line: "ERROR 1045 (28000): Access denied ...".
// `code` and `sqlstate` are its error code and SQLSTATE.
struct ServerError {
  int code = 0;
  std::string sqlstate;
  std::string message;
  std::string line() const;
};
ServerError read_error(std::string_view payload);

// An OK packet (0x00; or 0xfe ending rows): its affected rows and status.
struct Ok {
  uint64_t affected_rows = 0;
  uint16_t status = 0;
};
Ok read_ok(std::string_view payload, bool& good);

// Whether `payload` is an EOF packet (0xfe, shorter than 9 bytes), and its
// status flags.
bool is_eof(std::string_view payload, uint16_t& status);

// `s` as an SQL hex literal X'...': safe in any sql_mode and character set,
// for every string simba puts into a statement (README.md: no parameters
// in the text protocol).
std::string hex_literal(std::string_view s);

} // namespace simba::backend::mysql::wire
