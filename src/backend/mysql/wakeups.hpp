#pragma once
// Wake-ups on MySQL: a hint channel of named locks (GET_LOCK), since MySQL
// has no LISTEN. Safety never depends on it: a lost or late hint only
// leaves a waiter to its timed wake-up (core's rules), as on the other
// backends.
//
// The hint lock of a mutex (hint_name) is held by the session of its
// owner: the acquire that grants a lease takes it on the main connection
// (GET_LOCK(name, 0) in the same query: statements.cpp), the release lets
// it go after its COMMIT, and a process that dies lets it go with its
// session. A waiter sends GET_LOCK(name, a day) on a connection of its own
// and polls that socket: the server answers when the owner lets the lock
// go, to one waiter at a time, in the order they asked (MariaDB's
// metadata locks). The waiter then holds the hint lock itself: as owner,
// it lets it go after its own release (release_hint); when its look finds
// the mutex taken after all, it keeps it and waits for its timer, so a
// lock passed on at every failed look never makes the waiters spin.
// A release from a process that does not hold the lock (release --force
// or --lease) ends the waiter's connection that does (backend.cpp,
// wake_hint_holder): the lock goes on, and the waiter that held it sees
// its connection end (watch() polls it too) and looks.
// One server call per release, however many wait. The waiter's row in
// "<prefix>waiters" (its connection's id: status lists the live ones)
// shows the queue; the order is the server's.
#include "backend/mysql/connection.hpp"
#include "backend/mysql/statements.hpp"
#include "backend/uri.hpp"
#include "backend/wakeups.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace simba::backend::mysql {

// The name of the hint lock of `mutex` (a slot's row: its mutex's), unique
// per database and table prefix, within MySQL's 64 characters.
std::string hint_name(const MysqlUri& uri, const std::string& mutex);

class HintWakeups final : public QueueWakeups {
public:
  // A waiter's place, read by the backend on its main connection (the
  // hint connection may be waiting in GET_LOCK).
  using PlaceReader =
      std::function<std::optional<QueuePlace>(const std::string&, const std::string&)>;
  HintWakeups(const MysqlUri& uri, const Statements& sql, PlaceReader place)
      : m_uri(uri), m_sql(sql), m_place(std::move(place)) {}
  // Who waits, for status (backend/holder.hpp's string; "" none).
  // And when it gives up (epoch ms; 0 never), status's too.
  void set_holder(const std::string& holder, int64_t gives_up_at) {
    m_holder = holder;
    m_gives_up_at = gives_up_at;
  }

  // After a release of `mutex` (committed): the hint lock this connection
  // holds, if any, goes to the next waiter.
  void release_hint(const std::string& mutex);
  // The server's id of the hint connection (0: none): the session a
  // release must not end (backend.cpp, wake_hint_holder).
  uint32_t session() const { return m_conn.is_open() ? m_conn.id() : 0; }
  // simba exits next: the kernel closes the connection (and the server
  // lets its lock go).
  void leave() { m_conn.leave(); }

protected:
  int watch(const std::string& mutex, const std::string& contender, bool waiting) override;
  bool drain_wakeups() override;
  std::optional<QueuePlace> queue_place(const std::string& mutex,
                                        const std::string& contender) override {
    return m_place(mutex, contender);
  }

private:
  void reset();

  const MysqlUri& m_uri;
  const Statements& m_sql;
  PlaceReader m_place;
  Connection m_conn;
  std::string m_holder;
  int64_t m_gives_up_at = 0;
  std::string m_mutex, m_contender; // of the row in the waiters' queue, when m_queued
  bool m_queued = false;
  std::string m_name;     // the hint lock of the mutex watched
  bool m_pending = false; // a GET_LOCK was sent, no answer yet
  bool m_holding = false; // this connection holds m_name
  int64_t m_retry_at = 0; // after a failed connect: not before
};

} // namespace simba::backend::mysql
