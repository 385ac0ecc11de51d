#pragma once
// The PostgreSQL frontend/backend protocol 3.0, as bytes: building the
// messages simba sends and cutting the server's byte stream into messages.
// No I/O here (connection.cpp moves the bytes). Every integer is big-endian;
// a message is a type byte, then its length (itself included, not the
// type), then its body; the startup-phase requests have no type byte.
#include <cstddef>
#include <cstdint>
#include <string>

namespace simba::backend::pg::wire {

// Appends a message of type `type` (0: none, as the start-up requests):
// begin() reserves its length, end() writes it.
size_t begin(std::string& out, char type);
void end(std::string& out, size_t start);
void put_i16(std::string& out, int v);
void put_i32(std::string& out, int32_t v);
void put_str(std::string& out, const std::string& s); // NUL-terminated

// One message the server sent: its type and body.
struct Message {
  char type = 0;
  std::string body;
};

// Takes the first complete message out of `in` (from `pos` on, which it
// advances): 1 taken, 0 not complete yet, -1 malformed (a length below 4 or
// above `max_body`: said in `why`).
int take(const std::string& in, size_t& pos, Message& m, size_t max_body, std::string& why);

// Reads a message body in order; a read past the end marks it bad (and
// returns zeros or ""), so a truncated message is found, never overrun.
class Reader {
public:
  explicit Reader(const std::string& body) : m_b(body) {}
  int16_t i16();
  int32_t i32();
  std::string str(); // up to the next NUL
  std::string bytes(size_t n);
  bool ok() const { return m_ok; }
  bool at_end() const { return m_at == m_b.size(); }
  size_t left() const { return m_b.size() - m_at; }

private:
  const std::string& m_b;
  size_t m_at = 0;
  bool m_ok = true;
};

// An ErrorResponse or NoticeResponse: the fields simba uses.
struct ServerError {
  std::string severity; // ERROR, FATAL, PANIC (localized: 'S')
  std::string sqlstate;
  std::string message, detail, hint;
};
ServerError parse_error(const std::string& body);
// As libpq shows it on one line: "FATAL:  message DETAIL:  ... HINT:  ...".
std::string error_text(const ServerError& e);

} // namespace simba::backend::pg::wire
