// A PostgreSQL connection with deadlines (connection.hpp).
#include "backend/postgres/connection.hpp"

#include "backend/net/deadline_io.hpp"
#include "sys/clock.hpp"

#include <linux/tcp.h> // TCP_INFO's tcpi_bytes_received (glibc's tcp.h lacks it)
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>

namespace simba::backend::pg {
namespace {

void ignore_notice(void*, const char*) {}

// libpq's messages end with a newline and may span lines: one line.
std::string one_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\t', ' ');
  return s;
}

// libpq takes any message a server announces (a DataRow of 1 GB, read
// into one buffer) and reads while bytes keep coming: what one statement
// may receive is bounded here instead (issue 36 §6), as the Redis reply is
// (redis/reply_bound.hpp), and the socket's buffer kept small enough that
// libpq returns to us often.
constexpr uint64_t k_max_result_bytes = uint64_t(256) << 20;
constexpr int k_receive_buffer = 1 << 20;

// The bytes received on TCP socket `fd` so far; 0 for a Unix socket (no
// bound there: a local server is the host's own).
uint64_t bytes_received(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
      len < offsetof(tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received)
    return 0;
  return info.tcpi_bytes_received;
}

std::string too_big() {
  return "a result larger than " + std::to_string(k_max_result_bytes >> 20) +
         " MiB (a broken or hostile server?)";
}

} // namespace

std::string Connection::connect(const PostgresUri& uri, int64_t deadline) {
  close();
  const Libpq& pq = libpq();
  std::string seconds = std::to_string(std::max<int64_t>(2, (uri.timeout_ms + 999) / 1000));
  // Server-side bounds of a statement that outlives its client: set per
  // session at start-up, not with SET (which a pooler would leak to others).
  std::string ms = std::to_string(uri.timeout_ms);
  std::string options =
      "-c statement_timeout=" + ms + " -c idle_in_transaction_session_timeout=" + ms;
  // Keywords are applied in order: the URI (dbname, expanded) comes last,
  // so that whatever it says wins over these defaults.
  const char* keys[] = {"connect_timeout",
                        "keepalives",
                        "keepalives_idle",
                        "keepalives_interval",
                        "keepalives_count",
                        "fallback_application_name",
                        "options",
                        "dbname",
                        nullptr};
  const char* values[] = {seconds.c_str(),      "1",    "5", "2", "3", "simba", options.c_str(),
                          uri.conninfo.c_str(), nullptr};
  m_conn = pq.connect_start_params(keys, values, 1);
  if (!m_conn) return "out of memory";
  if (pq.status(m_conn) == k_connection_bad) {
    std::string why = error_text();
    close();
    return why;
  }
  int state = k_polling_writing;
  for (;;) {
    if (state == k_polling_ok) break;
    if (state == k_polling_failed) {
      std::string why = error_text();
      close();
      return why;
    }
    short events = state == k_polling_reading ? POLLIN : POLLOUT;
    if (!net::wait_for(pq.socket(m_conn), events, deadline)) {
      close();
      return net::k_timed_out;
    }
    state = pq.connect_poll(m_conn);
  }
  pq.set_nonblocking(m_conn, 1);
  pq.set_notice_processor(m_conn, ignore_notice, nullptr);
  net::set_cloexec(pq.socket(m_conn));
  ::setsockopt(pq.socket(m_conn), SOL_SOCKET, SO_RCVBUF, &k_receive_buffer,
               sizeof k_receive_buffer);
  return "";
}

int Connection::socket() const { return m_conn ? libpq().socket(m_conn) : -1; }

int Connection::notifications() {
  const Libpq& pq = libpq();
  if (!m_conn) return -1;
  if (!pq.consume_input(m_conn) || pq.status(m_conn) == k_connection_bad) {
    close();
    return -1;
  }
  int n = m_kept;
  m_kept = 0;
  while (PGnotify* note = pq.notifies(m_conn)) {
    pq.freemem(note);
    ++n;
  }
  return n;
}

bool Connection::await_payload(const std::string& payload, int64_t deadline) {
  const Libpq& pq = libpq();
  for (;;) {
    if (!m_conn) return false;
    if (!pq.consume_input(m_conn) || pq.status(m_conn) == k_connection_bad) {
      close();
      return false;
    }
    bool found = false;
    while (PGnotify* note = pq.notifies(m_conn)) {
      if (note->extra && payload == note->extra)
        found = true;
      else
        ++m_kept;
      pq.freemem(note);
    }
    if (found) return true;
    if (!net::wait_for(pq.socket(m_conn), POLLIN, deadline)) return false;
  }
}

bool Connection::stale() const { return m_conn && net::readable_now(libpq().socket(m_conn)); }

void Connection::close() {
  if (m_conn) libpq().finish(m_conn);
  m_conn = nullptr;
  m_kept = 0;
}

std::string Connection::error_text() const {
  std::string s = m_conn ? one_line(libpq().error_message(m_conn)) : "";
  return s.empty() ? "connection lost" : s;
}

Result Connection::query(const std::string& sql, const std::vector<std::string>& params,
                         int64_t deadline) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::string& p : params) values.push_back(p.c_str());
  bool sent = libpq().send_query_params(m_conn, sql.c_str(), static_cast<int>(values.size()),
                                        nullptr, values.data(), nullptr, nullptr, 0) == 1;
  return finish_query(sent, deadline);
}

Result Connection::script(const std::string& sql, int64_t deadline) {
  return finish_query(libpq().send_query(m_conn, sql.c_str()) == 1, deadline);
}

// Flushes what was queued, then reads until the results are complete; at
// the deadline the connection is closed (its answer, should it come, must
// not be taken for the next statement's).
Result Connection::finish_query(bool queued, int64_t deadline) {
  const Libpq& pq = libpq();
  Result r;
  if (!queued) {
    r.error = error_text();
    close();
    return r;
  }
  r.sent = true;
  int fd = pq.socket(m_conn);
  const uint64_t received_before = bytes_received(fd);
  for (;;) {
    int left = pq.flush(m_conn);
    if (left < 0) break;
    if (left == 0) {
      if (!pq.consume_input(m_conn)) break;
      if (bytes_received(fd) - received_before > k_max_result_bytes) {
        r.error = too_big();
        close();
        return r;
      }
      if (!pq.is_busy(m_conn)) return collect();
      if (!net::wait_for(fd, POLLIN, deadline)) {
        r.error = net::k_timed_out;
        close();
        return r;
      }
      continue;
    }
    if (!net::wait_for(fd, POLLIN | POLLOUT, deadline)) {
      r.error = net::k_timed_out;
      close();
      return r;
    }
    if (!pq.consume_input(m_conn)) break;
  }
  r.error = error_text();
  close();
  return r;
}

// Every result of the query, until libpq has none left; the last one with
// rows is kept (the schema script has several).
Result Connection::collect() {
  const Libpq& pq = libpq();
  Result r;
  r.sent = true;
  r.ok = true;
  while (PGresult* res = pq.get_result(m_conn)) {
    int status = pq.result_status(res);
    if (status == k_tuples_ok) {
      int n = pq.ntuples(res), fields = pq.nfields(res);
      r.rows.assign(static_cast<size_t>(n), std::vector<std::string>(static_cast<size_t>(fields)));
      for (int i = 0; i < n; ++i)
        for (int f = 0; f < fields; ++f)
          if (!pq.get_is_null(res, i, f)) r.rows[i][f] = pq.get_value(res, i, f);
    } else if (status != k_command_ok && status != k_empty_query && r.ok) {
      r.ok = false;
      const char* state = pq.result_error_field(res, k_diag_sqlstate);
      r.sqlstate = state ? state : "";
      r.error = one_line(pq.result_error_message(res));
    }
    pq.clear(res);
  }
  // Lost on the way, or the server ended the session with its refusal
  // (57P01 after pg_terminate_backend): the next call connects again.
  if (m_conn && (pq.status(m_conn) == k_connection_bad || (!r.ok && r.sqlstate.empty()))) close();
  return r;
}

} // namespace simba::backend::pg
