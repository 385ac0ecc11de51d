// The MySQL protocol's bytes (packets.hpp).
#include "backend/mysql/packets.hpp"

#include <algorithm>

namespace simba::backend::mysql::wire {

std::string packet(uint8_t sequence, std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 4);
  size_t n = payload.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  out += static_cast<char>((n >> 16) & 0xff);
  out += static_cast<char>(sequence);
  out.append(payload);
  return out;
}

void put_u16(std::string& out, uint16_t v) {
  out += static_cast<char>(v & 0xff);
  out += static_cast<char>(v >> 8);
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

void put_lenenc(std::string& out, uint64_t v) {
  int bytes = 0;
  if (v < 251) {
    out += static_cast<char>(v);
    return;
  } else if (v < (1u << 16)) {
    out += static_cast<char>(0xfc);
    bytes = 2;
  } else if (v < (1u << 24)) {
    out += static_cast<char>(0xfd);
    bytes = 3;
  } else {
    out += static_cast<char>(0xfe);
    bytes = 8;
  }
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint8_t Reader::u8() {
  if (m_at + 1 > m_in.size()) return m_ok = false, 0;
  return static_cast<uint8_t>(m_in[m_at++]);
}

uint16_t Reader::u16() {
  uint16_t lo = u8();
  return static_cast<uint16_t>(lo | uint16_t(u8()) << 8);
}

uint32_t Reader::u32() {
  uint32_t lo = u16();
  return lo | uint32_t(u16()) << 16;
}

uint64_t Reader::lenenc() {
  uint8_t first = u8();
  int bytes = first < 0xfb ? 0 : first == 0xfc ? 2 : first == 0xfd ? 3 : first == 0xfe ? 8 : -1;
  if (bytes < 0) return m_ok = false, 0; // 0xfb (NULL) or 0xff: no number
  if (bytes == 0) return first;
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(u8()) << (8 * i);
  return v;
}

std::string Reader::bytes(size_t n) {
  if (n > m_in.size() - m_at) {
    m_ok = false;
    m_at = m_in.size();
    return "";
  }
  std::string out(m_in.substr(m_at, n));
  m_at += n;
  return out;
}

std::string Reader::nul_string() {
  size_t end = m_in.find('\0', m_at);
  if (end == std::string_view::npos) return rest();
  std::string out(m_in.substr(m_at, end - m_at));
  m_at = end + 1;
  return out;
}

std::string Reader::rest() {
  std::string out(m_in.substr(std::min(m_at, m_in.size())));
  m_at = m_in.size();
  return out;
}

std::string Reader::lenenc_string(bool& null) {
  null = m_at < m_in.size() && static_cast<uint8_t>(m_in[m_at]) == 0xfb;
  if (null) {
    ++m_at;
    return "";
  }
  uint64_t n = lenenc();
  if (!m_ok) return "";
  return bytes(static_cast<size_t>(n));
}

std::string ServerError::line() const {
  std::string out = "ERROR " + std::to_string(code);
  if (!sqlstate.empty()) out += " (" + sqlstate + ")";
  return out + ": " + message;
}

ServerError read_error(std::string_view payload) {
  Reader in(payload);
  ServerError e;
  in.u8(); // 0xff
  e.code = in.u16();
  std::string rest = in.rest();
  if (rest.size() >= 6 && rest[0] == '#') {
    e.sqlstate = rest.substr(1, 5);
    rest = rest.substr(6);
  }
  // One line: a server's message with a newline would split the error line.
  for (char& c : rest)
    if (c == '\n' || c == '\r') c = ' ';
  e.message = rest;
  return e;
}

Ok read_ok(std::string_view payload, bool& good) {
  Reader in(payload);
  Ok ok;
  in.u8();
  ok.affected_rows = in.lenenc();
  in.lenenc(); // last insert id
  ok.status = in.u16();
  good = in.ok();
  return ok;
}

bool is_eof(std::string_view payload, uint16_t& status) {
  if (payload.empty() || static_cast<uint8_t>(payload[0]) != 0xfe || payload.size() >= 9)
    return false;
  Reader in(payload);
  in.u8();
  in.u16(); // warnings
  status = in.u16();
  return true;
}

std::string hex_literal(std::string_view s) {
  static const char* k_hex = "0123456789ABCDEF";
  if (s.empty()) return "X''";
  std::string out = "X'";
  out.reserve(s.size() * 2 + 3);
  for (unsigned char c : s) {
    out += k_hex[c >> 4];
    out += k_hex[c & 15];
  }
  return out + "'";
}

} // namespace simba::backend::mysql::wire
