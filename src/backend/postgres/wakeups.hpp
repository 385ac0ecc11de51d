#pragma once
// The wake-ups of the PostgreSQL backend (backend/wakeups.hpp: the
// lifecycle): a connection of their own that LISTENs on two channels, the
// mutex's and the waiter's own, and the FIFO queue of waiters, the table
// "<prefix>waiters" (statements.hpp). A release NOTIFYs the first waiter
// whose session still runs, in the same statement: one waiter is woken
// per release, and acquires itself (no hand-over). A forced release (and
// release_once, whose waiters must each learn that the window is done)
// NOTIFYs the mutex's channel: the owner, and every waiter. Through a
// pooler in transaction mode LISTEN cannot work (the server connection
// goes back to the pool): `listen=off` in the URI, and waiters wake on
// their timers (docs/backends/postgres.md). Given `listen=on` there, the
// first wait of the process finds it out (check_listen(): a NOTIFY of its
// own that never comes), says so once, and waits on its timers.
#include "backend/postgres/connection.hpp"
#include "backend/postgres/statements.hpp"
#include "backend/uri.hpp"
#include "backend/wakeups.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace simba::backend::pg {

// The channel of `mutex`, or with `contender` that waiter's own: an
// identifier for each schema, table prefix, mutex (and waiter), a hash,
// since channel names are short identifiers (two sharing one only wake
// each other for nothing).
std::string channel(const PostgresUri& uri, const std::string& mutex,
                    const std::string& contender = "");

class QueueListenWakeups final : public QueueWakeups {
public:
  // A waiter's place in its queue (Wakeups::place()), read by the backend
  // on its main connection: the LISTEN connection must not read what it
  // would then not see on its socket.
  using PlaceReader =
      std::function<std::optional<QueuePlace>(const std::string&, const std::string&)>;
  // NOTIFYs channel $1 with payload $2 from the backend's main connection
  // (another session than the LISTEN's, as a release is); false when it
  // could not.
  using Notifier = std::function<bool(const std::string&, const std::string&)>;
  // `uri` and `sql` must outlive this.
  QueueListenWakeups(const PostgresUri& uri, const Statements& sql, PlaceReader place,
                     Notifier notify)
      : m_uri(uri), m_sql(sql), m_place(std::move(place)), m_notify(std::move(notify)) {}
  // The queue entry goes with the backend (wakeups.hpp, 6.).
  ~QueueListenWakeups() override { leave_queue(); }
  QueueListenWakeups(const QueueListenWakeups&) = delete;
  QueueListenWakeups& operator=(const QueueListenWakeups&) = delete;

  bool look_after_queueing() const override { return m_look; }
  std::string take_warning() override { return std::exchange(m_warning, std::string()); }
  std::string take_detail() override { return std::exchange(m_detail, std::string()); }
  // A statement on the backend's main connection was answered: a LISTEN
  // session lost meanwhile (a restart) is set up again, and the waiter
  // queued again, at the next wait() instead of after the retry period.
  // The queue keeps its order only among those queued (core/fifo.hpp): a
  // waiter back from its back-off must not stay out of it for a second
  // more. No I/O.
  void server_answered() {
    if (!m_conn.is_open()) m_retry_at = 0;
  }
  // Written with our place in a queue (status lists the waiters).
  void set_holder(const std::string& encoded) { m_holder = encoded; }
  // --slots: the statement that took (or renewed) a slot of `mutex` for
  // `contender` took its place out of the queue too (slots_sql.hpp), so
  // that the next release wakes another and the waiters behind do not
  // count it; so does a release (statements.cpp: k_leave_queue). A wait()
  // that follows joins the queue again. No I/O.
  void left_queue(const std::string& mutex, const std::string& contender) {
    if (mutex == m_mutex && contender == m_contender) {
      m_queued = false;
      m_queued_at.clear();
    }
  }

private:
  int watch(const std::string& mutex, const std::string& contender, bool waiting) override;
  bool drain_wakeups() override;
  std::optional<QueuePlace> queue_place(const std::string& mutex,
                                        const std::string& contender) override {
    return m_place(mutex, contender);
  }

  bool listen(int64_t deadline);
  void enqueue(int64_t deadline);
  void leave_queue();
  void check_listen();

  const PostgresUri& m_uri;
  const Statements& m_sql;
  PlaceReader m_place;
  Notifier m_notify;
  std::string m_holder; // set_holder()'s
  Connection m_conn;
  std::string m_mutex; // of the LISTEN
  std::string m_contender;
  bool m_queued = false;  // in m_mutex's queue as m_contender
  // When we first queued in this wait (the server's µs, as text): queuing
  // again after a lost session keeps it (statements.cpp: k_enqueue).
  std::string m_queued_at;
  bool m_look = true;     // see look_after_queueing()
  int64_t m_retry_at = 0; // after a failed LISTEN: not before then
  // check_listen() found that notifications do not come: no LISTEN, no
  // queue (the releases would wake us in vain, and not those behind us).
  bool m_deaf = false;
  std::string m_warning, m_detail; // for take_warning(), take_detail(): said once
};

} // namespace simba::backend::pg
