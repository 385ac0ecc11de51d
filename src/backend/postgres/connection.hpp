#pragma once
// One connection to PostgreSQL with deadlines: simba's own client of the
// frontend/backend protocol 3.0 (wire.hpp) on the deadline-bounded socket
// I/O of backend/net (TLS included), so that a call never waits past its
// deadline and no library is loaded. No session state is kept on the
// server between statements (PgBouncer's transaction pooling may give each
// statement another server connection). Start-up and authentication:
// connection_startup.cpp, connection_auth.cpp.
#include "backend/net/tls.hpp"
#include "backend/postgres/conninfo.hpp"
#include "backend/postgres/wire.hpp"
#include "backend/uri.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace simba::backend::pg {

// A finished query: its rows (NULL reads as ""), or why not. `sent`: the
// statement may have reached the server (an unanswered statement may have
// been applied: indeterminate); `sqlstate`: the server refused it (then
// nothing was applied: one statement is one transaction).
struct Result {
  bool ok = false;
  bool sent = false;
  std::string error;
  std::string sqlstate;
  std::vector<std::vector<std::string>> rows;
};

class Connection {
public:
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { close(); }

  // Connects (TCP keepalives, the session timeouts in `options`,
  // fallback_application_name=simba, then the URI's own parameters, which
  // win; libpq's environment and ~/.pgpass for what it leaves out). "" or
  // why not (never the password).
  std::string connect(const PostgresUri& uri, int64_t deadline);
  bool is_open() const { return m_fd >= 0; }
  // An idle connection that is readable was closed by the server (or sent
  // what nobody asked for): it cannot be used.
  bool stale() const;
  // Sends Terminate (if the socket takes it at once) and closes.
  void close();
  // The process exits next: the kernel closes the socket (docs/benchmarks.md).
  void leave();

  // One statement with text parameters (the extended protocol, an unnamed
  // statement: nothing outlives it).
  Result query(const std::string& sql, const std::vector<std::string>& params, int64_t deadline);
  // Several statements in one string (the simple protocol: one implicit
  // transaction), no parameters: the schema.
  Result script(const std::string& sql, int64_t deadline);

  // A connection in LISTEN: reads what came without waiting. The number
  // of notifications (with those await_payload() kept), or -1 when the
  // connection is gone (then closed).
  int notifications();
  // Waits until a notification with the payload `payload` comes (true), or
  // the deadline passes or the connection is lost (false). Others that
  // come meanwhile are kept for notifications().
  bool await_payload(const std::string& payload, int64_t deadline);
  int socket() const { return m_fd; }
  // The connection's TLS, nullptr when it has none (doctor: the certificate).
  const net::TlsSession* tls() const { return m_tls.get(); }

private:
  struct Auth; // connection_auth.cpp

  // connection_startup.cpp
  std::string attempt(const Endpoint& e, const ConnInfo& ci, bool standby_only, int64_t deadline);
  std::string attempt_once(const Endpoint& e, const ConnInfo& ci, bool tls, bool& tls_failed,
                           int64_t deadline);
  std::string open_socket(const Endpoint& e, const ConnInfo& ci, int64_t deadline);
  std::string negotiate_tls(const Endpoint& e, const ConnInfo& ci, bool& refused, int64_t deadline);
  std::string startup(const Endpoint& e, const ConnInfo& ci, int64_t deadline);
  std::string check_session(const std::string& attrs, int64_t deadline);
  // connection_auth.cpp
  std::string handshake(const Endpoint& e, const ConnInfo& ci, int64_t deadline);
  std::string answer_auth(const wire::Message& m, Auth& a, int64_t deadline);
  std::string answer_sasl(int code, wire::Reader& r, Auth& a, int64_t deadline);
  std::string send_password_message(const std::string& body, int64_t deadline);

  // connection.cpp: bytes and messages
  std::string send(const std::string& out, int64_t deadline, size_t& sent);
  std::string receive(bool& got) const;
  std::string read_message(wire::Message& m, size_t max_body, int64_t deadline);
  int take_async(const wire::Message& m, const std::string* payload, bool& found);
  int drain(const std::string* payload, bool& found);
  Result exchange(const std::string& out, int64_t deadline);
  void drop();

  int m_fd = -1;
  std::unique_ptr<net::TlsSession> m_tls;
  mutable std::string m_in; // received, not yet taken
  mutable size_t m_pos = 0; // where the next message starts in m_in
  mutable uint64_t m_received = 0;
  std::string m_lost; // why the connection ended, once m_in is read
  int m_kept = 0;     // notifications read, not yet counted
  int32_t m_pid = 0;  // BackendKeyData
  int32_t m_secret = 0;
};

} // namespace simba::backend::pg
