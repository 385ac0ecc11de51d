// The hint channel of named locks (wakeups.hpp).
#include "backend/mysql/wakeups.hpp"

#include "backend/mysql/packets.hpp"
#include "backend/mysql/sha1.hpp"
#include "backend/net/deadline_io.hpp"
#include "core/slots.hpp"
#include "sys/clock.hpp"

namespace simba::backend::mysql {
namespace {

// How long a waiter's GET_LOCK waits at most (then it asks again).
constexpr int k_wait_seconds = 86400;
// After a hint connection could not be made: the waiter's timers only,
// for this long.
constexpr int64_t k_retry_ms = 1000;

} // namespace

std::string hint_name(const MysqlUri& uri, const std::string& mutex) {
  static const char* k_hex = "0123456789abcdef";
  Sha1 h;
  h.update(uri.database);
  h.update(std::string(1, '\0'));
  h.update(uri.prefix);
  h.update(std::string(1, '\0'));
  h.update(core::mutex_of_row(mutex));
  std::string out = "simba:";
  for (uint8_t b : h.finish()) out += std::string{k_hex[b >> 4], k_hex[b & 15]};
  return out;
}

void HintWakeups::reset() {
  m_conn.close(); // the queue's row, of a gone connection, is no longer listed
  m_pending = m_holding = m_queued = false;
}

int HintWakeups::watch(const std::string& mutex, const std::string& contender, bool waiting) {
  std::string name = hint_name(m_uri, mutex);
  if (name != m_name) {
    reset();
    m_name = name;
  }
  if (!waiting) {
    // An owner hears nothing here (its guard finds a forced release). Its
    // GET_LOCK may have been granted already (the lock let go as it
    // acquired): then it holds the hint, which its release passes on. One
    // still queued stays until the release (release_hint), which cancels
    // it: closing it now could let the lock go to the next waiter while
    // this one owns the mutex, and nobody would hear its release.
    if (m_pending && net::readable_now(m_conn.socket())) drain_wakeups();
    if (m_pending) return -1;
    if (m_queued && !m_conn.query(m_sql.dequeue(wire::hex_literal(m_mutex),
                                                wire::hex_literal(m_contender)),
                                  sys::boottime_ms() + m_uri.timeout_ms)
                         .ok)
      reset();
    m_queued = false;
    return -1;
  }
  // Woken, the mutex taken after all: its timer, and the socket, which
  // turns readable when a release from another process ended this
  // session to pass the lock on (backend.cpp, wake_hint_holder).
  if (m_holding) return m_conn.socket();
  if (!m_pending) {
    const int64_t now = sys::boottime_ms();
    if (now < m_retry_at) return -1;
    if (!m_conn.is_open() && !m_conn.connect(m_uri, now + m_uri.timeout_ms).empty()) {
      m_retry_at = now + k_retry_ms;
      return -1;
    }
    if (!m_queued || m_mutex != mutex || m_contender != contender) {
      m_mutex = mutex;
      m_contender = contender;
      m_queued = m_conn.query(m_sql.enqueue(wire::hex_literal(mutex), wire::hex_literal(contender),
                                            m_holder.empty() ? "NULL" : wire::hex_literal(m_holder),
                                            m_gives_up_at),
                              now + m_uri.timeout_ms)
                     .ok;
      if (!m_conn.is_open()) return -1;
    }
    if (!m_conn.send("SELECT GET_LOCK(" + wire::hex_literal(m_name) + ", " +
                         std::to_string(k_wait_seconds) + ")",
                     now + m_uri.timeout_ms)
             .empty())
      return -1;
    m_pending = true;
  }
  return m_conn.socket();
}

// The GET_LOCK answered: 1, this connection holds the hint lock (the owner
// let it go, or its session ended). Anything else (a timeout of a day, an error, a lost
// connection): a look all the same, and the next wait asks again.
bool HintWakeups::drain_wakeups() {
  if (!m_pending) {
    if (!m_holding || !m_conn.stale()) return false;
    reset(); // ended by a release (above): a look, and the next wait asks again
    return true;
  }
  Result r = m_conn.answer(sys::boottime_ms() + m_uri.timeout_ms);
  m_pending = false;
  if (r.ok && r.sets.size() == 1 && r.sets[0].rows.size() == 1 && r.sets[0].rows[0].size() == 1 &&
      r.sets[0].rows[0][0] == "1") {
    m_holding = true;
  } else {
    reset();
  }
  return true;
}

void HintWakeups::release_hint(const std::string& mutex) {
  if (hint_name(m_uri, mutex) != m_name) return;
  if (m_pending) {
    // Still queued for the lock: the connection goes, and with it the
    // lock if the server granted it meanwhile.
    reset();
    return;
  }
  if (!m_holding) return;
  m_holding = false;
  if (!m_conn.query("DO RELEASE_LOCK(" + wire::hex_literal(m_name) + ")",
                    sys::boottime_ms() + m_uri.timeout_ms)
           .ok)
    reset(); // the server lets the lock go with the session
}

} // namespace simba::backend::mysql
