// Connecting: a socket (TCP or Unix), the server's greeting (handshake
// v10), TLS as the URI's tls asks (the SSL request), HandshakeResponse41
// and mysql_native_password, an AuthSwitchRequest to it (connection.hpp).
// The other authentication methods are refused by name (README.md).
#include "backend/mysql/connection.hpp"

#include "backend/mysql/packets.hpp"
#include "backend/mysql/sha1.hpp"
#include "backend/net/deadline_io.hpp"
#include "backend/net/dial.hpp"

#include <algorithm>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

namespace simba::backend::mysql {
namespace {

constexpr const char* k_native = "mysql_native_password";
constexpr uint8_t k_utf8mb4_general_ci = 45;
constexpr uint32_t k_max_packet = 1u << 24;

// What simba asks for: the 4.1 protocol and its authentication, several
// statements and results per query, matched (not changed) rows counted.
constexpr uint32_t k_client_caps = wire::k_long_password | wire::k_found_rows |
                                   wire::k_long_flag | wire::k_connect_with_db |
                                   wire::k_protocol_41 | wire::k_transactions |
                                   wire::k_secure_connection | wire::k_multi_statements |
                                   wire::k_multi_results | wire::k_plugin_auth;

struct Greeting {
  std::string version;
  uint32_t id = 0; // the server's connection id (CONNECTION_ID())
  uint32_t caps = 0;
  std::string scramble; // 20 bytes
  std::string plugin;
};

std::string read_greeting(const std::string& p, Greeting& g) {
  wire::Reader in(p);
  uint8_t protocol = in.u8();
  if (protocol != 10)
    return "the server greeted with protocol " + std::to_string(protocol) +
           ", not 10 (not MySQL or MariaDB?)";
  g.version = in.nul_string();
  g.id = in.u32();
  g.scramble = in.bytes(8);
  in.u8();
  g.caps = in.u16();
  if (in.done()) return in.ok() ? "" : "a truncated greeting from the server";
  in.u8();  // character set
  in.u16(); // status
  g.caps |= uint32_t(in.u16()) << 16;
  uint8_t data_len = in.u8();
  in.bytes(10); // reserved (MariaDB: its extended capabilities)
  if (g.caps & wire::k_secure_connection) {
    size_t part2 = data_len > 8 ? std::max<size_t>(13, data_len - 8) : 13;
    std::string rest = in.bytes(part2);
    g.scramble += rest.substr(0, 12); // the last byte is a NUL
  }
  if (g.caps & wire::k_plugin_auth) g.plugin = in.nul_string();
  if (!in.ok() || g.scramble.size() != 20) return "a truncated greeting from the server";
  return "";
}

std::string unsupported_plugin(const std::string& plugin) {
  return "the server asks for the authentication method '" + plugin +
         "', which simba does not speak (only mysql_native_password: docs/backends/mysql.md); "
         "ALTER USER ... IDENTIFIED BY '...' (MariaDB) or IDENTIFIED WITH mysql_native_password "
         "BY '...' (MySQL; a syntax error on MariaDB) lets simba in";
}

} // namespace

std::string Connection::connect(const MysqlUri& uri, int64_t deadline, bool* refused) {
  close();
  m_login_error = 0;
  bool refused_here = false;
  std::string why = uri.socket.empty() ? net::dial_host(uri.host, uri.port, deadline, m_fd)
                                       : net::dial_unix(uri.socket, deadline, m_fd);
  if (!why.empty()) {
    if (!uri.socket.empty() && why != net::k_timed_out)
      why += " (no server listening on " + uri.socket + "?)";
    return why;
  }
  if (uri.socket.empty()) {
    int one = 1; // a statement is one write: no Nagle delay behind it
    ::setsockopt(m_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  why = handshake(uri, deadline, refused_here);
  if (!why.empty()) drop();
  if (refused) *refused = refused_here;
  return why;
}

std::string Connection::handshake(const MysqlUri& uri, int64_t deadline, bool& refused) {
  std::string p;
  if (std::string why = read_packet(p, deadline); !why.empty()) return why;
  if (!p.empty() && static_cast<uint8_t>(p[0]) == 0xff) {
    refused = true;
    return wire::read_error(p).line();
  }
  Greeting g;
  if (std::string why = read_greeting(p, g); !why.empty()) return why;
  m_version = g.version;
  m_id = g.id;
  if (!(g.caps & wire::k_protocol_41) || !(g.caps & wire::k_secure_connection)) {
    refused = true;
    return "the server " + g.version + " does not speak the 4.1 protocol (too old)";
  }
  uint32_t caps = k_client_caps & (g.caps | wire::k_connect_with_db);
  bool want_tls = uri.tls != MysqlUri::Tls::disable &&
                  !(uri.tls == MysqlUri::Tls::prefer && !uri.socket.empty());
  if (want_tls && !(g.caps & wire::k_ssl)) {
    if (uri.tls != MysqlUri::Tls::prefer) {
      refused = true;
      return "the server does not offer TLS, which the URI requires (tls=require or verify-*)";
    }
    want_tls = false;
  }
  if (want_tls) {
    caps |= wire::k_ssl;
    if (std::string why = start_tls(uri, caps, deadline); !why.empty()) return why;
  }
  std::string out;
  wire::put_u32(out, caps);
  wire::put_u32(out, k_max_packet);
  out += static_cast<char>(k_utf8mb4_general_ci);
  out.append(23, '\0');
  out += uri.user;
  out += '\0';
  std::string answer = native_password_scramble(uri.password, g.scramble);
  out += static_cast<char>(answer.size());
  out += answer;
  out += uri.database;
  out += '\0';
  if (caps & wire::k_plugin_auth) out += std::string(k_native) + '\0';
  if (std::string why = send_packet(out, deadline); !why.empty()) return why;
  return authenticate(uri, g.scramble, deadline, refused);
}

// The SSL request (the response's first 32 bytes), then TLS on the socket.
std::string Connection::start_tls(const MysqlUri& uri, uint32_t caps, int64_t deadline) {
  std::string out;
  wire::put_u32(out, caps);
  wire::put_u32(out, k_max_packet);
  out += static_cast<char>(k_utf8mb4_general_ci);
  out.append(23, '\0');
  if (std::string why = send_packet(out, deadline); !why.empty()) return why;
  net::TlsOptions o;
  o.host = uri.host;
  o.ca_file = uri.cacert;
  o.insecure = uri.tls == MysqlUri::Tls::prefer || uri.tls == MysqlUri::Tls::require;
  o.check_name = uri.tls == MysqlUri::Tls::verify_full;
  m_tls = std::make_unique<net::TlsSession>();
  std::string why = m_tls->start(m_fd, o, deadline);
  if (why.empty()) return "";
  if (why.rfind("TLS", 0) != 0) why = "TLS: " + why;
  // What to change: the name checked, or the CA trusted.
  if (why.find("mismatch") != std::string::npos)
    why += " (tls=verify-full: the certificate must name " + uri.host +
           "; verify-ca checks the CA only)";
  else if (why.find("not trusted") != std::string::npos)
    why += uri.cacert.empty() ? " (give the CA that signed it: cacert=FILE)"
                              : " (did " + uri.cacert + " sign it?)";
  return why;
}

// The server's answer to our response: OK, ERR, or a switch to another
// method (mysql_native_password with a new scramble is answered; any
// other is refused by name).
std::string Connection::authenticate(const MysqlUri& uri, std::string scramble, int64_t deadline,
                                     bool& refused) {
  for (int round = 0; round < 3; ++round) {
    std::string p;
    if (std::string why = read_packet(p, deadline); !why.empty()) return why;
    uint8_t kind = p.empty() ? 0 : static_cast<uint8_t>(p[0]);
    if (kind == 0x00) return "";
    if (kind == 0xff) {
      refused = true;
      wire::ServerError e = wire::read_error(p);
      m_login_error = e.code;
      return e.line();
    }
    if (kind == 0x01) {
      refused = true;
      return unsupported_plugin("caching_sha2_password"); // its "more data"
    }
    if (kind != 0xfe) return "an unexpected answer to the login (not MySQL?)";
    wire::Reader in(p);
    in.u8();
    std::string plugin = in.nul_string();
    std::string data = in.rest();
    if (plugin != k_native) {
      refused = true;
      return unsupported_plugin(plugin);
    }
    if (data.size() < 20) return "a truncated authentication switch from the server";
    scramble = data.substr(0, 20);
    if (std::string why = send_packet(native_password_scramble(uri.password, scramble), deadline);
        !why.empty())
      return why;
  }
  return "the server keeps asking for authentication (not MySQL?)";
}

} // namespace simba::backend::mysql
