#pragma once
// The wake-ups of the PostgreSQL backend: LISTEN on a connection of its
// own, on one channel per mutex, which every release and forced release
// NOTIFYs (statements.cpp) when it changed the lease. Every waiter is
// woken (no queue: each then tries its acquire, one wins), and an owner
// hears of a forced release. Through a pooler in transaction mode LISTEN
// cannot work (the server connection goes back to the pool): `listen=off`
// in the URI, and waiters wake on their timers (README "Backends").
#include "backend/postgres/connection.hpp"
#include "backend/uri.hpp"
#include "backend/wakeups.hpp"

#include <cstdint>
#include <string>

namespace simba::backend::pg {

// The channel of `mutex`: an identifier of its own for each schema, table
// prefix and mutex (a hash: channel names are short identifiers; two
// mutexes sharing one only wake each other for nothing).
std::string channel(const PostgresUri& uri, const std::string& mutex);

class ListenWakeups final : public Wakeups {
public:
  explicit ListenWakeups(const PostgresUri& uri) : m_uri(uri) {}

  // For Backend::wakeups(): another mutex is another channel.
  void target(const std::string& mutex);

  int wait() override { return listen(); }
  int own() override { return listen(); }
  void settle() override {}
  Wake wake() override;
  void leave() { m_conn.leave(); }

private:
  int listen();

  const PostgresUri& m_uri;
  std::string m_channel;
  Connection m_conn;
  int64_t m_retry_at = 0; // after a failed LISTEN: not before then
};

} // namespace simba::backend::pg
