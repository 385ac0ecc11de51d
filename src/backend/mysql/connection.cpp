// A MySQL connection with deadlines: bytes, packets and queries
// (connection.hpp).
#include "backend/mysql/connection.hpp"

#include "backend/mysql/packets.hpp"
#include "backend/net/deadline_io.hpp"
#include "sys/clock.hpp"

#include <poll.h>
#include <unistd.h>

namespace simba::backend::mysql {
namespace {

// What one query may receive is bounded, as on the other backends: a
// server that keeps sending is refused, whatever it is.
constexpr uint64_t k_max_result_bytes = uint64_t(256) << 20;
constexpr uint8_t k_com_query = 0x03;
constexpr uint8_t k_com_quit = 0x01;

std::string not_mysql(const char* what) {
  return std::string("an unexpected ") + what + " from the server (not MySQL, or a broken server?)";
}

} // namespace

std::string Connection::send_packet(const std::string& payload, int64_t deadline, size_t* sent) {
  std::string out = wire::packet(m_sequence++, payload);
  size_t left = 0;
  std::string why = m_tls ? m_tls->send_all(m_fd, out, deadline, left)
                          : net::send_all(m_fd, out, deadline, left);
  if (sent) *sent = left;
  return why;
}

// One non-blocking read onto m_in; `got`: something came.
std::string Connection::receive(bool& got) {
  got = false;
  if (m_pos > 0 && m_pos == m_in.size()) m_in.clear(), m_pos = 0;
  size_t before = m_in.size();
  std::string err;
  if (m_tls) {
    err = m_tls->receive_some(m_fd, m_in, got);
  } else {
    char buf[65536];
    size_t n = 0;
    err = net::receive_some(m_fd, buf, sizeof buf, n);
    m_in.append(buf, n);
    got = n > 0;
  }
  m_received += m_in.size() - before;
  return err;
}

// The next packet's payload, waiting until the deadline. A packet of 16
// MiB or more (continued in the next) is refused: no answer of simba's is
// that big.
std::string Connection::read_packet(std::string& payload, int64_t deadline) {
  for (;;) {
    // Packets that keep coming never let the wait below see the deadline.
    if (sys::boottime_ms() >= deadline) return net::k_timed_out;
    if (m_in.size() - m_pos >= 4) {
      auto byte = [&](size_t i) { return static_cast<uint8_t>(m_in[m_pos + i]); };
      size_t len = byte(0) | size_t(byte(1)) << 8 | size_t(byte(2)) << 16;
      if (len > wire::k_max_payload) return not_mysql("packet of 16 MiB");
      if (m_in.size() - m_pos >= 4 + len) {
        m_sequence = static_cast<uint8_t>(byte(3) + 1);
        payload.assign(m_in, m_pos + 4, len);
        m_pos += 4 + len;
        return "";
      }
    }
    if (std::string why = charge(0); !why.empty()) return why;
    // A server that says why, then hangs up: what came first is read first.
    if (!m_lost.empty()) return m_lost;
    if (m_pos > (1 << 16)) m_in.erase(0, m_pos), m_pos = 0;
    if (!net::wait_for(m_fd, POLLIN, deadline)) return net::k_timed_out;
    bool got = false;
    m_lost = receive(got);
  }
}

// `bytes` more of the answer kept in memory; why not, past the bound.
std::string Connection::charge(size_t bytes) {
  m_received += bytes;
  if (m_received <= k_max_result_bytes) return "";
  return "a result larger than " + std::to_string(k_max_result_bytes >> 20) +
         " MiB (a broken or hostile server?)";
}

// The column definitions (skipped), their EOF, the rows and their EOF.
std::string Connection::read_result_set(uint64_t columns, ResultSet& set, uint16_t& status,
                                        int64_t deadline) {
  std::string p;
  for (uint64_t i = 0; i < columns; ++i)
    if (std::string why = read_packet(p, deadline); !why.empty()) return why;
  if (std::string why = read_packet(p, deadline); !why.empty()) return why;
  if (!wire::is_eof(p, status)) return not_mysql("column definition");
  for (;;) {
    if (std::string why = read_packet(p, deadline); !why.empty()) return why;
    if (wire::is_eof(p, status)) return "";
    if (!p.empty() && static_cast<uint8_t>(p[0]) == 0xff) return "\xff" + p;
    wire::Reader in(p);
    Row row;
    row.reserve(columns);
    for (uint64_t i = 0; i < columns && in.ok(); ++i) {
      bool null = false;
      row.push_back(in.lenenc_string(null));
    }
    if (!in.ok() || !in.done()) return not_mysql("row");
    // A row costs more kept than it took on the wire (a 5-byte row, its
    // vector and string: 15 times that): counted as kept, so that the
    // bound is on memory.
    if (std::string why = charge(sizeof(Row) + columns * sizeof(std::string)); !why.empty())
      return why;
    set.rows.push_back(std::move(row));
  }
}

Result Connection::query(const std::string& sql, int64_t deadline) {
  Result r;
  if (m_fd < 0) {
    r.error = "not connected";
    return r;
  }
  m_sequence = 0;
  size_t sent = 0;
  std::string why = send_packet(std::string(1, static_cast<char>(k_com_query)) + sql, deadline, &sent);
  if (!why.empty()) {
    r.sent = sent > 0;
    r.error = why;
    drop();
    return r;
  }
  return answer(deadline);
}

std::string Connection::send(const std::string& sql, int64_t deadline) {
  if (m_fd < 0) return "not connected";
  m_sequence = 0;
  std::string why = send_packet(std::string(1, static_cast<char>(k_com_query)) + sql, deadline);
  if (!why.empty()) drop();
  return why;
}

Result Connection::answer(int64_t deadline) {
  Result r;
  r.sent = true;
  m_received = 0;
  std::string why;
  if (m_fd < 0) {
    r.error = "not connected";
    return r;
  }
  for (bool more = true; more;) {
    std::string p;
    if (why = read_packet(p, deadline); !why.empty()) break;
    uint8_t kind = p.empty() ? 0xff : static_cast<uint8_t>(p[0]);
    ResultSet set;
    uint16_t status = 0;
    if (kind == 0x00) {
      bool good = false;
      wire::Ok ok = wire::read_ok(p, good);
      if (!good) {
        why = not_mysql("OK packet");
        break;
      }
      set.affected = ok.affected_rows;
      status = ok.status;
    } else if (kind == 0xff) {
      why = "\xff" + p;
    } else if (kind == 0xfb) {
      why = "the server asked for a local file (LOAD DATA LOCAL), which simba never sends";
    } else {
      wire::Reader in(p);
      uint64_t columns = in.lenenc();
      if (!in.ok() || !in.done() || columns == 0 || columns > 4096)
        why = not_mysql("answer");
      else
        why = read_result_set(columns, set, status, deadline);
    }
    if (why.empty()) why = charge(sizeof(ResultSet)); // endless OKs saying "more"
    if (!why.empty()) break;
    r.sets.push_back(std::move(set));
    more = (status & wire::k_more_results) != 0;
  }
  if (why.rfind("\xff\xff", 0) == 0) {
    // The server refused a statement: the connection is fine, and the
    // statements after it did not run.
    wire::ServerError e = wire::read_error(std::string_view(why).substr(1));
    r.code = e.code;
    r.sqlstate = e.sqlstate;
    r.error = e.line();
    return r;
  }
  if (!why.empty()) {
    r.error = why;
    drop();
    return r;
  }
  r.ok = true;
  return r;
}

bool Connection::stale() const { return m_fd >= 0 && net::readable_now(m_fd); }

void Connection::drop() {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
  m_tls.reset();
  m_in.clear();
  m_pos = 0;
  m_lost.clear();
}

void Connection::close() {
  if (m_fd < 0) return;
  m_sequence = 0;
  // COM_QUIT only if it leaves at once: a hung server must not delay us.
  send_packet(std::string(1, static_cast<char>(k_com_quit)), 0);
  drop();
}

void Connection::leave() {
  m_fd = -1; // the kernel closes it at exit
  m_tls.reset();
}

} // namespace simba::backend::mysql
