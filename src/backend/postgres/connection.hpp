#pragma once
// One connection to PostgreSQL with deadlines: libpq's asynchronous API
// (PQconnectStartParams/PQconnectPoll, PQsendQueryParams/PQconsumeInput)
// on poll(), so that a call never waits past its deadline. No session
// state is kept on the server between statements (PgBouncer's transaction
// pooling may give each statement another server connection).
#include "backend/postgres/libpq.hpp"
#include "backend/uri.hpp"

#include <cstdint>
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
  // win). "" or why not (libpq's message: it never holds the password).
  std::string connect(const PostgresUri& uri, int64_t deadline);
  bool is_open() const { return m_conn != nullptr; }
  // An idle connection that is readable was closed by the server (or sent
  // what nobody asked for): it cannot be used.
  bool stale() const;
  void close();
  // The process exits next: the kernel closes the socket (docs/benchmarks.md).
  void leave() { m_conn = nullptr; }

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
  int socket() const;

private:
  Result finish_query(bool sent, int64_t deadline);
  Result collect();
  std::string error_text() const;

  PGconn* m_conn = nullptr;
  int m_kept = 0; // notifications await_payload() read
};

} // namespace simba::backend::pg
