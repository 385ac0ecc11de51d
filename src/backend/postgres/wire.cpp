// The protocol's message format (wire.hpp).
#include "backend/postgres/wire.hpp"

namespace simba::backend::pg::wire {

size_t begin(std::string& out, char type) {
  if (type) out.push_back(type);
  size_t at = out.size();
  out.append(4, '\0');
  return at;
}

void end(std::string& out, size_t start) {
  uint32_t n = static_cast<uint32_t>(out.size() - start);
  for (int i = 0; i < 4; ++i) out[start + i] = static_cast<char>(n >> (24 - 8 * i));
}

void put_i16(std::string& out, int v) {
  out.push_back(static_cast<char>((v >> 8) & 0xff));
  out.push_back(static_cast<char>(v & 0xff));
}

void put_i32(std::string& out, int32_t v) {
  uint32_t u = static_cast<uint32_t>(v);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(u >> (24 - 8 * i)));
}

void put_str(std::string& out, const std::string& s) {
  out += s;
  out.push_back('\0');
}

namespace {
uint32_t be32(const char* p) {
  auto b = [p](int i) { return uint32_t(static_cast<unsigned char>(p[i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}
} // namespace

int take(const std::string& in, size_t& pos, Message& m, size_t max_body, std::string& why) {
  if (in.size() - pos < 5) return 0;
  uint32_t len = be32(in.data() + pos + 1);
  if (len < 4 || len - 4 > max_body) {
    why = "a malformed or oversized message from the server (type '" + std::string(1, in[pos]) +
          "', " + std::to_string(len) + " bytes: a broken or hostile " +
          "server, or not PostgreSQL?)";
    return -1;
  }
  if (in.size() - pos - 1 < len) return 0;
  m.type = in[pos];
  m.body.assign(in, pos + 5, len - 4);
  pos += 1 + len;
  return 1;
}

int16_t Reader::i16() {
  if (m_b.size() - m_at < 2) {
    m_ok = false;
    m_at = m_b.size();
    return 0;
  }
  auto b = [this](size_t i) { return unsigned(static_cast<unsigned char>(m_b[m_at + i])); };
  int16_t v = static_cast<int16_t>(b(0) << 8 | b(1));
  m_at += 2;
  return v;
}

int32_t Reader::i32() {
  if (m_b.size() - m_at < 4) {
    m_ok = false;
    m_at = m_b.size();
    return 0;
  }
  int32_t v = static_cast<int32_t>(be32(m_b.data() + m_at));
  m_at += 4;
  return v;
}

std::string Reader::str() {
  size_t nul = m_b.find('\0', m_at);
  if (nul == std::string::npos) {
    m_ok = false;
    m_at = m_b.size();
    return "";
  }
  std::string s = m_b.substr(m_at, nul - m_at);
  m_at = nul + 1;
  return s;
}

std::string Reader::bytes(size_t n) {
  if (m_b.size() - m_at < n) {
    m_ok = false;
    m_at = m_b.size();
    return "";
  }
  std::string s = m_b.substr(m_at, n);
  m_at += n;
  return s;
}

ServerError parse_error(const std::string& body) {
  ServerError e;
  Reader r(body);
  for (;;) {
    std::string code = r.bytes(1);
    if (!r.ok() || code[0] == '\0') break;
    std::string value = r.str();
    switch (code[0]) {
    case 'S': e.severity = value; break;
    case 'C': e.sqlstate = value; break;
    case 'M': e.message = value; break;
    case 'D': e.detail = value; break;
    case 'H': e.hint = value; break;
    default: break;
    }
  }
  return e;
}

std::string error_text(const ServerError& e) {
  std::string s = (e.severity.empty() ? "ERROR" : e.severity) + ":  " +
                  (e.message.empty() ? "(no message)" : e.message);
  if (!e.detail.empty()) s += " DETAIL:  " + e.detail;
  if (!e.hint.empty()) s += " HINT:  " + e.hint;
  for (char& c : s)
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  return s;
}

} // namespace simba::backend::pg::wire
