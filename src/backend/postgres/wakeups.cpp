// LISTEN/NOTIFY wake-ups (wakeups.hpp).
#include "backend/postgres/wakeups.hpp"

#include "sys/clock.hpp"

#include <cstdio>

namespace simba::backend::pg {
namespace {

// A failed LISTEN is tried again at most this often.
constexpr int64_t k_retry_ms = 1000;

} // namespace

std::string channel(const PostgresUri& uri, const std::string& mutex) {
  uint64_t h = 1469598103934665603ull; // FNV-1a
  for (const std::string* part : {&uri.schema, &uri.prefix, &mutex}) {
    for (unsigned char c : *part + '\0') {
      h ^= c;
      h *= 1099511628211ull;
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string("simba_") + hex;
}

void ListenWakeups::target(const std::string& mutex) {
  std::string c = channel(m_uri, mutex);
  if (c == m_channel) return;
  m_channel = c;
  m_conn.close();
  m_retry_at = 0;
}

int ListenWakeups::listen() {
  if (m_conn.is_open()) return m_conn.socket();
  int64_t now = sys::boottime_ms();
  if (now < m_retry_at) return -1;
  m_retry_at = now + k_retry_ms;
  int64_t deadline = now + m_uri.timeout_ms;
  if (!m_conn.connect(m_uri, deadline).empty()) return -1;
  if (!m_conn.script("LISTEN " + m_channel, deadline).ok) {
    m_conn.close();
    return -1;
  }
  return m_conn.socket();
}

// A lost connection may have lost a notification too: look.
Wake ListenWakeups::wake() {
  Wake w;
  if (m_conn.notifications() != 0) w.kind = Wake::Kind::look;
  return w;
}

} // namespace simba::backend::pg
