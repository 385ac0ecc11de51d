// A PostgreSQL connection with deadlines: bytes, messages, queries and
// notifications (connection.hpp).
#include "backend/postgres/connection.hpp"

#include "backend/net/deadline_io.hpp"
#include "sys/clock.hpp"

#include <poll.h>
#include <unistd.h>

namespace simba::backend::pg {
namespace {

// What one statement may receive is bounded (issue 36 §6), as the Redis
// reply is (redis/reply_bound.hpp): a server that announces a message
// larger, or keeps sending, is refused, whatever it is.
constexpr uint64_t k_max_result_bytes = uint64_t(256) << 20;

std::string too_big() {
  return "a result larger than " + std::to_string(k_max_result_bytes >> 20) +
         " MiB (a broken or hostile server?)";
}

std::string unexpected(char type) {
  return std::string("an unexpected message '") + (type >= ' ' && type < 127 ? type : '?') +
         "' from the server (not PostgreSQL, or a broken server?)";
}

void add_row(const std::string& body, Result& r, bool& bad) {
  wire::Reader in(body);
  int n = in.i16();
  std::vector<std::string> row;
  row.reserve(n > 0 ? static_cast<size_t>(n) : 0);
  for (int i = 0; i < n && in.ok(); ++i) {
    int32_t len = in.i32();
    row.push_back(len < 0 ? std::string() : in.bytes(static_cast<size_t>(len)));
  }
  bad = !in.ok() || n < 0;
  r.rows.push_back(std::move(row));
}

} // namespace

std::string Connection::send(const std::string& out, int64_t deadline, size_t& sent) {
  sent = 0;
  return m_tls ? m_tls->send_all(m_fd, out, deadline, sent)
               : net::send_all(m_fd, out, deadline, sent);
}

// One non-blocking read onto m_in; `got`: something came.
std::string Connection::receive(bool& got) const {
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

// The next message that is not an asynchronous one (notices and parameter
// changes are dropped, notifications counted), waiting until the deadline.
std::string Connection::read_message(wire::Message& m, size_t max_body, int64_t deadline) {
  for (;;) {
    std::string why;
    int r = wire::take(m_in, m_pos, m, max_body, why);
    if (r < 0) return why;
    if (r > 0) {
      bool found = false;
      if (take_async(m, nullptr, found) == 0) return "";
      continue;
    }
    // A server that says why, then hangs up (a TLS close_notify may come
    // in the same read): what came before the end is read first.
    if (!m_lost.empty()) return m_lost;
    if (m_pos > (1 << 16)) m_in.erase(0, m_pos), m_pos = 0;
    if (!net::wait_for(m_fd, POLLIN, deadline)) return net::k_timed_out;
    bool got = false;
    m_lost = receive(got);
  }
}

// 1 when `m` is asynchronous (taken here), else 0. A notification with
// `payload` sets `found`; any other is kept for notifications().
int Connection::take_async(const wire::Message& m, const std::string* payload, bool& found) {
  if (m.type == 'N' || m.type == 'S') return 1;
  if (m.type != 'A') return 0;
  wire::Reader in(m.body);
  in.i32();
  in.str();
  std::string said = in.str();
  if (payload && said == *payload)
    found = true;
  else
    ++m_kept;
  return 1;
}

// Takes every complete message already received, all of which must be
// asynchronous on an idle connection: 0, or -1 when the connection is
// unusable (then closed).
int Connection::drain(const std::string* payload, bool& found) {
  for (;;) {
    wire::Message m;
    std::string why;
    int r = wire::take(m_in, m_pos, m, 1 << 20, why);
    if (r == 0) return 0;
    if (r < 0 || take_async(m, payload, found) == 0) {
      drop();
      return -1;
    }
  }
}

int Connection::notifications() {
  if (m_fd < 0) return -1;
  for (bool got = true; got;) {
    std::string err = receive(got);
    if (!err.empty()) {
      drop();
      return -1;
    }
  }
  bool found = false;
  if (drain(nullptr, found) < 0) return -1;
  int n = m_kept;
  m_kept = 0;
  return n;
}

bool Connection::await_payload(const std::string& payload, int64_t deadline) {
  for (;;) {
    if (m_fd < 0) return false;
    bool found = false;
    if (drain(&payload, found) < 0) return false;
    if (found) return true;
    if (!net::wait_for(m_fd, POLLIN, deadline)) return false;
    bool got = false;
    if (!receive(got).empty()) {
      drop();
      return false;
    }
  }
}

bool Connection::stale() const {
  if (m_fd < 0 || !net::readable_now(m_fd)) return false;
  if (!m_tls) return true;
  // A TLS 1.3 server sends its session tickets after the handshake: records
  // for OpenSSL, nothing for us. Only data, an EOF or an error make it stale.
  size_t before = m_in.size();
  bool got = false;
  return !receive(got).empty() || m_in.size() != before;
}

void Connection::drop() {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
  m_tls.reset();
  m_in.clear();
  m_pos = 0;
  m_kept = 0;
  m_lost.clear();
}

void Connection::close() {
  if (m_fd >= 0) {
    std::string bye;
    wire::end(bye, wire::begin(bye, 'X'));
    size_t sent = 0;
    send(bye, sys::boottime_ms(), sent); // only if the socket takes it now
  }
  drop();
}

void Connection::leave() {
  m_fd = -1;
  (void)m_tls.release(); // nothing to free: the process exits
}

Result Connection::query(const std::string& sql, const std::vector<std::string>& params,
                         int64_t deadline) {
  std::string out;
  size_t at = wire::begin(out, 'P'); // Parse: the unnamed statement, types inferred
  wire::put_str(out, "");
  wire::put_str(out, sql);
  wire::put_i16(out, 0);
  wire::end(out, at);
  at = wire::begin(out, 'B'); // Bind: the unnamed portal, text in and out
  wire::put_str(out, "");
  wire::put_str(out, "");
  wire::put_i16(out, 0);
  wire::put_i16(out, static_cast<int>(params.size()));
  for (const std::string& p : params) {
    wire::put_i32(out, static_cast<int32_t>(p.size()));
    out += p;
  }
  wire::put_i16(out, 0);
  wire::end(out, at);
  at = wire::begin(out, 'E'); // Execute: every row
  wire::put_str(out, "");
  wire::put_i32(out, 0);
  wire::end(out, at);
  wire::end(out, wire::begin(out, 'S')); // Sync: commit, then ReadyForQuery
  return exchange(out, deadline);
}

Result Connection::script(const std::string& sql, int64_t deadline) {
  std::string out;
  size_t at = wire::begin(out, 'Q');
  wire::put_str(out, sql);
  wire::end(out, at);
  return exchange(out, deadline);
}

// Sends the request, then reads until ReadyForQuery: the rows of the last
// statement that returned rows, or the first error. At the deadline the
// connection is closed (its answer, should it come, must not be taken for
// the next statement's); so it is after a FATAL error (the server ends the
// session: 57P01 after pg_terminate_backend).
Result Connection::exchange(const std::string& out, int64_t deadline) {
  Result r;
  if (m_fd < 0) {
    r.error = "not connected";
    return r;
  }
  size_t sent = 0;
  r.error = send(out, deadline, sent);
  r.sent = sent > 0;
  if (!r.error.empty()) {
    drop();
    return r;
  }
  const uint64_t before = m_received;
  bool failed = false, fatal = false;
  for (;;) {
    wire::Message m;
    std::string why = read_message(m, k_max_result_bytes, deadline);
    if (why.empty() && m_received - before > k_max_result_bytes) why = too_big();
    if (!why.empty()) {
      if (!failed) r.error = why;
      r.ok = false;
      drop();
      return r;
    }
    bool bad = false;
    switch (m.type) {
    case 'T': r.rows.clear(); break; // a new result's rows follow
    case 'D': add_row(m.body, r, bad); break;
    case 'E':
      if (!failed) {
        wire::ServerError e = wire::parse_error(m.body);
        r.sqlstate = e.sqlstate;
        r.error = wire::error_text(e);
        fatal = e.severity == "FATAL" || e.severity == "PANIC";
      }
      failed = true;
      break;
    case 'Z':
      r.ok = !failed;
      if (fatal || (failed && r.sqlstate.empty())) drop();
      return r;
    case '1':
    case '2':
    case '3':
    case 'C':
    case 'I':
    case 'n':
    case 's':
    case 't': break;
    default: bad = true;
    }
    if (bad) {
      if (!failed) r.error = unexpected(m.type);
      r.ok = false;
      drop();
      return r;
    }
  }
}

} // namespace simba::backend::pg
