// LISTEN/NOTIFY wake-ups and the waiters' queue (wakeups.hpp).
#include "backend/postgres/wakeups.hpp"

#include "sys/clock.hpp"

#include <unistd.h>

#include <cstdio>

namespace simba::backend::pg {
namespace {

// A failed LISTEN is tried again at most this often.
constexpr int64_t k_retry_ms = 1000;

// check_listen() runs once per process: at the first wait of any waiter.
bool g_listen_checked = false;

} // namespace

std::string channel(const PostgresUri& uri, const std::string& mutex,
                    const std::string& contender) {
  uint64_t h = 1469598103934665603ull; // FNV-1a
  for (const std::string* part : {&uri.schema, &uri.prefix, &mutex, &contender}) {
    for (unsigned char c : *part + '\0') {
      h ^= c;
      h *= 1099511628211ull;
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string(contender.empty() ? "simba_" : "simba_w") + hex;
}

int QueueListenWakeups::watch(const std::string& mutex, const std::string& contender,
                              bool waiting) {
  if (mutex != m_mutex || contender != m_contender) {
    leave_queue();
    m_conn.close();
    m_mutex = mutex;
    m_contender = contender;
    m_retry_at = 0;
  }
  if (m_deaf) return -1;
  int64_t deadline = sys::boottime_ms() + m_uri.timeout_ms;
  if (!m_conn.is_open() && !listen(deadline)) return -1;
  if (waiting && !m_queued) enqueue(deadline);
  if (waiting && m_queued && !g_listen_checked) check_listen();
  if (!waiting && m_queued) leave_queue();
  return m_deaf ? -1 : m_conn.socket();
}

// Through PgBouncer in transaction mode the LISTEN went back to the pool
// with its server connection: no release would ever wake us, and each
// hand-over would take until the lease's end. Found out only by a waiter
// (nothing is sent on an uncontended run), once per process: a NOTIFY of
// our own channel from the main connection, which must come back here
// within the call's budget (at once on a direct connection). Not back:
// said once, and the wait goes on without LISTEN and out of the queue.
void QueueListenWakeups::check_listen() {
  g_listen_checked = true;
  const std::string payload = "simba-check-" + std::to_string(::getpid());
  const int64_t start = sys::boottime_ms();
  if (!m_notify(channel(m_uri, m_mutex, m_contender), payload)) return; // cannot tell
  bool came = m_conn.await_payload(payload, start + m_uri.timeout_ms);
  // A release's notification read meanwhile: look.
  if (m_conn.is_open() && m_conn.notifications() > 0) m_look = true;
  if (came || !m_conn.is_open()) return; // a lost connection tells nothing
  m_warning = "LISTEN does not work at " + m_uri.shown +
              " (PgBouncer in transaction mode?): hand-overs wait for the lease's end (~ttl) "
              "-- connect directly or use session pooling, or give listen=off";
  m_detail = "a NOTIFY to this waiter's channel, sent from simba's other connection, did not "
             "come on its LISTEN connection within " +
             std::to_string(m_uri.timeout_ms) + " ms";
  leave_queue();
  m_conn.close();
  m_deaf = true;
}

// A new session: its LISTENs, and no queue entry yet (an older one's
// session is gone, and the releases skip it).
bool QueueListenWakeups::listen(int64_t deadline) {
  m_queued = false;
  int64_t now = sys::boottime_ms();
  if (now < m_retry_at) return false;
  m_retry_at = now + k_retry_ms;
  if (!m_conn.connect(m_uri, deadline).empty()) return false;
  std::string sql = "LISTEN " + quote_identifier(channel(m_uri, m_mutex)) + "; LISTEN " +
                    quote_identifier(channel(m_uri, m_mutex, m_contender));
  if (!m_conn.script(sql, deadline).ok) {
    m_conn.close();
    return false;
  }
  return true;
}

// A notification that came while the answer was read is taken here: the
// socket will not show it; looking once does.
void QueueListenWakeups::enqueue(int64_t deadline) {
  Result r = m_conn.query(m_sql.enqueue(),
                          {m_mutex, m_contender, channel(m_uri, m_mutex, m_contender), m_holder,
                           m_queued_at.empty() ? "0" : m_queued_at},
                          deadline);
  m_queued = r.ok;
  if (r.ok && r.rows.size() == 1 && r.rows[0].size() == 2 && m_queued_at.empty())
    m_queued_at = r.rows[0][1];
  m_look = !r.ok || r.rows.size() != 1 || r.rows[0].empty() || r.rows[0][0] != "f";
  if (m_conn.is_open() && m_conn.notifications() > 0) m_look = true;
}

void QueueListenWakeups::leave_queue() {
  m_queued_at.clear(); // the next wait is a new arrival
  if (!m_queued) return;
  m_queued = false;
  if (m_conn.is_open())
    m_conn.query(m_sql.dequeue(), {m_mutex, m_contender}, sys::boottime_ms() + m_uri.timeout_ms);
}

// A lost connection may have lost a notification too: look.
bool QueueListenWakeups::drain_wakeups() {
  int n = m_conn.notifications();
  if (n < 0) m_queued = false;
  return n != 0;
}

} // namespace simba::backend::pg
