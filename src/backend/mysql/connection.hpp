#pragma once
// One connection to MySQL or MariaDB with deadlines: simba's own client of
// the client/server protocol (packets.hpp) on the deadline-bounded socket
// I/O of backend/net (TLS included), so that a call never waits past its
// deadline and no library is loaded. Handshake v10, HandshakeResponse41,
// mysql_native_password (and an AuthSwitchRequest to it), TLS through the
// SSL request; then COM_QUERY, the text protocol, several statements per
// query (CLIENT_MULTI_STATEMENTS). Start-up: connection_handshake.cpp.
#include "backend/net/tls.hpp"
#include "backend/uri.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace simba::backend::mysql {

using Row = std::vector<std::string>; // NULL reads as ""

// The answer of one statement of a query: rows (a SELECT) or the rows it
// changed (CLIENT_FOUND_ROWS: those it matched).
struct ResultSet {
  uint64_t affected = 0;
  std::vector<Row> rows;
};

// A finished query: one ResultSet per statement, or why not. `sent`: the
// query may have reached the server (an unanswered query may have been
// applied: indeterminate); `code` and `sqlstate`: the server refused a
// statement (an ERR packet; the statements after it did not run).
struct Result {
  bool ok = false;
  bool sent = false;
  std::string error;
  int code = 0;
  std::string sqlstate;
  std::vector<ResultSet> sets;
};

class Connection {
public:
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { close(); }

  // Connects, authenticates and selects the URI's database. "" or why not
  // (never the password); `refused` is set when the server will not have
  // us (a refused login, an authentication method simba does not speak, a
  // TLS the URI requires and the server does not offer): trying again
  // does not help.
  std::string connect(const MysqlUri& uri, int64_t deadline, bool* refused = nullptr);
  // The last connect's login was refused for its password (ERROR 1045,
  // access denied): not a database the user may not use, not a host or a
  // method the server will not have.
  bool password_refused() const { return m_login_error == 1045; }
  bool is_open() const { return m_fd >= 0; }
  // An idle connection that is readable was closed by the server (or sent
  // what nobody asked for): it cannot be used.
  bool stale() const;
  // Sends COM_QUIT (if the socket takes it at once) and closes.
  void close();
  // The process exits next: the kernel closes the socket.
  void leave();

  // One COM_QUERY (several statements separated by ';' may be sent at
  // once): every statement's answer, in order.
  Result query(const std::string& sql, int64_t deadline);
  // query() in two halves, for a query whose answer comes later (a
  // GET_LOCK that waits: wakeups.hpp): send() then, once the socket is
  // readable, answer(). "" or why the query could not be sent.
  std::string send(const std::string& sql, int64_t deadline);
  Result answer(int64_t deadline);
  int socket() const { return m_fd; }
  // The server's id of this session (CONNECTION_ID()), once connected.
  uint32_t id() const { return m_id; }

  const std::string& server_version() const { return m_version; }
  bool tls() const { return m_tls != nullptr; }
  int64_t tls_not_after() const { return m_tls ? m_tls->peer_not_after() : -1; }

private:
  // connection_handshake.cpp
  std::string handshake(const MysqlUri& uri, int64_t deadline, bool& refused);
  std::string start_tls(const MysqlUri& uri, uint32_t caps, int64_t deadline);
  std::string authenticate(const MysqlUri& uri, std::string scramble, int64_t deadline,
                           bool& refused);

  // connection.cpp: bytes and packets
  std::string send_packet(const std::string& payload, int64_t deadline, size_t* sent = nullptr);
  std::string receive(bool& got);
  std::string read_packet(std::string& payload, int64_t deadline);
  std::string charge(size_t bytes);
  std::string read_result_set(uint64_t columns, ResultSet& set, uint16_t& status,
                              int64_t deadline);
  void drop();

  int m_fd = -1;
  std::unique_ptr<net::TlsSession> m_tls;
  std::string m_in; // received, not yet taken
  size_t m_pos = 0; // where the next packet starts in m_in
  uint64_t m_received = 0; // of the answer: its bytes, and what its rows cost kept
  uint8_t m_sequence = 0; // of the next packet we send
  std::string m_lost;     // why the connection ended, once m_in is read
  int m_login_error = 0;  // the code of the last login's ERR packet
  std::string m_version;
  uint32_t m_id = 0;
};

} // namespace simba::backend::mysql
