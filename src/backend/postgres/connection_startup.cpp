// Connecting: the URI's hosts in order, a socket (TCP or Unix), TLS as
// sslmode asks (SSLRequest), the start-up message, authentication
// (connection_auth.cpp), ReadyForQuery, then target_session_attrs
// (connection.hpp).
#include "backend/net/deadline_io.hpp"
#include "backend/net/dial.hpp"
#include "backend/postgres/connection.hpp"
#include "sys/clock.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace simba::backend::pg {
namespace {

// Start-up messages are small; an ErrorResponse longer than this is not
// from PostgreSQL.
constexpr size_t k_max_startup_body = 64 << 10;
constexpr int k_receive_buffer = 1 << 20;
constexpr int32_t k_protocol_3_0 = 196608;
constexpr int32_t k_ssl_request = 80877103;

void set_int(int fd, int level, int name, int value) {
  ::setsockopt(fd, level, name, &value, sizeof value);
}

void tune_tcp(int fd, const ConnInfo& ci) {
  set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1);
  if (ci.keepalives) {
    set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
    if (ci.keepalives_idle > 0) set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, ci.keepalives_idle);
    if (ci.keepalives_interval > 0) set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, ci.keepalives_interval);
    if (ci.keepalives_count > 0) set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, ci.keepalives_count);
  }
  if (ci.tcp_user_timeout_ms > 0)
    set_int(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, ci.tcp_user_timeout_ms);
}

} // namespace

std::string Connection::open_socket(const Endpoint& e, const ConnInfo& ci, int64_t deadline) {
  std::string why;
  if (e.unix_socket()) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::string path = e.socket_path();
    if (path.size() >= sizeof sa.sun_path) return "the socket path " + path + " is too long";
    std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
    m_fd = net::dial(reinterpret_cast<sockaddr*>(&sa), sizeof sa, AF_UNIX, deadline, why);
    return m_fd < 0 ? why + " (no server listening on " + path + "?)" : "";
  }
  addrinfo hints{}, *list = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (!e.address.empty()) hints.ai_flags = AI_NUMERICHOST;
  const std::string& name = e.address.empty() ? e.host : e.address;
  int rc = ::getaddrinfo(name.c_str(), std::to_string(e.port).c_str(), &hints, &list);
  if (rc != 0) return "could not translate host name \"" + name + "\": " + gai_strerror(rc);
  for (addrinfo* a = list; a && m_fd < 0; a = a->ai_next) {
    m_fd = net::dial(a->ai_addr, a->ai_addrlen, a->ai_family, deadline, why);
    if (why == net::k_timed_out) break;
  }
  ::freeaddrinfo(list);
  if (m_fd < 0) return why;
  tune_tcp(m_fd, ci);
  set_int(m_fd, SOL_SOCKET, SO_RCVBUF, k_receive_buffer);
  return "";
}

// SSLRequest, then the server's one byte: 'S' starts TLS, 'N' refuses it
// (`refused`: the caller decides whether plain will do).
std::string Connection::negotiate_tls(const Endpoint& e, const ConnInfo& ci, bool& refused,
                                      int64_t deadline) {
  refused = false;
  std::string out;
  size_t at = wire::begin(out, 0);
  wire::put_i32(out, 1234 << 16 | 5679); // = k_ssl_request's two halves
  wire::end(out, at);
  static_assert((1234 << 16 | 5679) == k_ssl_request);
  size_t sent = 0;
  if (std::string why = send(out, deadline, sent); !why.empty()) return why;
  // Exactly one byte: anything after it came before TLS, unprotected (and
  // would be taken for TLS's), so it is refused (CVE-2021-23222).
  if (!net::wait_for(m_fd, POLLIN, deadline)) return net::k_timed_out;
  char answer = 0;
  ssize_t n = ::recv(m_fd, &answer, 1, 0);
  if (n <= 0) return n == 0 ? "the server closed the connection" : std::strerror(errno);
  if (answer == 'N') {
    refused = true;
    return "";
  }
  if (answer != 'S')
    return "the server answered the SSL request with '" + std::string(1, answer) +
           "' (not PostgreSQL?)";
  if (net::readable_now(m_fd)) return "the server sent unencrypted data after agreeing to TLS";
  net::TlsOptions o;
  o.host = e.host; // the name the certificate must carry (hostaddr only dials)
  o.ca_file = ci.sslrootcert == "system" ? "" : ci.sslrootcert;
  o.cert_file = ci.sslcert;
  o.key_file = ci.sslkey;
  o.insecure = ci.sslmode != "verify-ca" && ci.sslmode != "verify-full";
  o.check_name = ci.sslmode == "verify-full";
  m_tls = std::make_unique<net::TlsSession>();
  return m_tls->start(m_fd, o, deadline);
}

// The start-up message, then the server's answers up to ReadyForQuery.
std::string Connection::startup(const Endpoint& e, const ConnInfo& ci, int64_t deadline) {
  std::string out;
  size_t at = wire::begin(out, 0);
  wire::put_i32(out, k_protocol_3_0);
  auto param = [&out](const char* name, const std::string& value) {
    if (value.empty()) return;
    wire::put_str(out, name);
    wire::put_str(out, value);
  };
  param("user", ci.user);
  param("database", ci.dbname);
  param("options", ci.options);
  param("application_name", ci.application_name);
  param("client_encoding", ci.client_encoding);
  out.push_back('\0');
  wire::end(out, at);
  size_t sent = 0;
  if (std::string why = send(out, deadline, sent); !why.empty()) return why;
  return handshake(e, ci, deadline);
}

// target_session_attrs: asked of the server itself (a pooler answers for
// the server behind it).
std::string Connection::check_session(const std::string& attrs, int64_t deadline) {
  if (attrs == "any") return "";
  bool by_recovery = attrs == "primary" || attrs == "standby";
  Result r =
      script(by_recovery ? "SELECT pg_catalog.pg_is_in_recovery()" : "SHOW transaction_read_only",
             deadline);
  if (!r.ok || r.rows.size() != 1 || r.rows[0].size() != 1)
    return r.error.empty() ? "cannot check target_session_attrs" : r.error;
  bool yes = r.rows[0][0] == "t" || r.rows[0][0] == "on";
  bool wanted = attrs == "read-only" || attrs == "standby" ? yes : !yes;
  if (wanted) return "";
  close();
  return "the server is " +
         std::string(by_recovery ? (yes ? "a standby" : "a primary")
                                 : (yes ? "read-only" : "read-write")) +
         ", not " + attrs;
}

// One try on one endpoint: socket, TLS when `tls`, start-up.
std::string Connection::attempt_once(const Endpoint& e, const ConnInfo& ci, bool tls,
                                     bool& tls_failed, int64_t deadline) {
  tls_failed = false;
  std::string why = open_socket(e, ci, deadline);
  if (why.empty() && tls) {
    bool refused = false;
    why = negotiate_tls(e, ci, refused, deadline);
    if (!why.empty()) {
      tls_failed = why != net::k_timed_out;
    } else if (refused && ci.sslmode != "prefer" && ci.sslmode != "allow") {
      why = "the server does not support TLS, but sslmode=" + ci.sslmode + " requires it";
    } else if (refused) {
      m_tls.reset();
    }
  }
  if (why.empty()) why = startup(e, ci, deadline);
  if (!why.empty()) drop();
  return why;
}

// sslmode's fallbacks: prefer tries TLS, then plain if TLS itself failed;
// allow tries plain, then TLS if the server refused. A Unix socket never
// has TLS (as with libpq).
std::string Connection::attempt(const Endpoint& e, const ConnInfo& ci, bool standby_only,
                                int64_t deadline) {
  bool tcp = !e.unix_socket();
  bool tls = tcp && ci.sslmode != "disable" && ci.sslmode != "allow";
  bool tls_failed = false;
  std::string why = attempt_once(e, ci, tls, tls_failed, deadline);
  if (!why.empty() && why != net::k_timed_out && tcp &&
      ((ci.sslmode == "prefer" && tls_failed) || ci.sslmode == "allow"))
    why = attempt_once(e, ci, ci.sslmode == "allow", tls_failed, deadline);
  if (!why.empty()) return why;
  std::string attrs = ci.target_session_attrs;
  if (attrs == "prefer-standby") attrs = standby_only ? "standby" : "any";
  return check_session(attrs, deadline);
}

std::string Connection::connect(const PostgresUri& uri, int64_t deadline) {
  close();
  std::string ms = std::to_string(uri.timeout_ms);
  // Under the URI's own parameters: connect_timeout, TCP keepalives, the
  // name, and the server-side bounds of a statement that outlives its
  // client, set per session at start-up, not with SET (which a pooler
  // would leak to others).
  std::map<std::string, std::string> defaults = {
      {"connect_timeout", std::to_string(std::max<int64_t>(2, (uri.timeout_ms + 999) / 1000))},
      {"keepalives", "1"},
      {"keepalives_idle", "5"},
      {"keepalives_interval", "2"},
      {"keepalives_count", "3"},
      {"fallback_application_name", "simba"},
      {"options", "-c statement_timeout=" + ms + " -c idle_in_transaction_session_timeout=" + ms}};
  ConnInfo ci;
  if (std::string why = parse_conninfo(uri.conninfo, defaults, ci); !why.empty()) return why;
  std::string whys;
  bool prefer_standby = ci.target_session_attrs == "prefer-standby";
  for (int pass = prefer_standby ? 0 : 1; pass < 2; ++pass) {
    for (const Endpoint& e : ci.endpoints) {
      int64_t end = deadline;
      if (ci.connect_timeout_s > 0)
        end = std::min(deadline, sys::boottime_ms() + int64_t(ci.connect_timeout_s) * 1000);
      std::string why = attempt(e, ci, pass == 0, end);
      if (why.empty()) return "";
      if (ci.endpoints.size() == 1 && !prefer_standby) return why;
      whys += (whys.empty() ? "" : "; ") + e.shown() + ": " + why;
      if (sys::boottime_ms() >= deadline) return whys;
    }
  }
  return whys;
}

} // namespace simba::backend::pg
