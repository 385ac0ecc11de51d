#pragma once
// systemd's notification protocol (sd_notify(3)) for `simba lead` under
// Type=notify, spoken directly: one datagram per message on the Unix socket
// $NOTIFY_SOCKET ('@': the abstract namespace). No libsystemd.
//
// ServiceNotifier derives the messages from what the driver sees (the
// core stays free of I/O): READY=1 with the first STATUS, once a backend
// answer shows simba leader or standby; STATUS= again when that changes;
// WATCHDOG=1 every WATCHDOG_USEC/2 while the backend has answered within a
// lease's time (ttl + transition, and a waiter's poll jitter and one
// call's time), so that systemd restarts a simba that cannot renew;
// STOPPING=1 when a stop signal comes.
#include "core/contender.hpp"
#include "sys/fd.hpp"

#include <sys/socket.h>
#include <sys/un.h>

#include <cstdint>
#include <optional>
#include <string>

namespace simba::cli {

class SdNotify {
public:
  // From $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID (the watchdog is
  // ours only if that pid is simba's, or unset). All three are removed
  // from the environment: CMD does not speak for simba. Disabled without
  // $NOTIFY_SOCKET (or with one that cannot be used).
  static SdNotify from_environment();

  bool enabled() const { return m_fd.valid(); }
  // WATCHDOG_USEC / 2 in ms (at least 1); 0: no watchdog.
  int64_t watchdog_every_ms() const { return m_watchdog_every_ms; }
  // One datagram, best effort: never blocks, errors are ignored (systemd
  // gone must not stop the leader).
  void send(const std::string& message) const;

private:
  sys::Fd m_fd;
  sockaddr_un m_addr{};
  socklen_t m_addr_len = 0;
  int64_t m_watchdog_every_ms = 0;
};

class ServiceNotifier {
public:
  ServiceNotifier(SdNotify notify, const core::ContenderConfig& config);

  // A backend call was answered (`r`), or a grant came; `leader`: the
  // contender owns the mutex after it (owning or draining). `now`: local.
  void on_answer(int64_t now, core::Op op, const core::CallResult& r, bool leader);
  void on_stop();
  // When on_timer is due next (the watchdog's next ping); nullopt: never.
  std::optional<int64_t> wake_at() const;
  void on_timer(int64_t now);

private:
  void set_status(const std::string& status);
  bool healthy(int64_t now) const;

  SdNotify m_notify;
  const core::ContenderConfig& m_config;
  bool m_ready = false;
  bool m_stopping = false;
  std::string m_status;
  std::optional<int64_t> m_last_answer_at; // local: the backend's last ok reply
  int64_t m_next_ping_at = 0;
};

} // namespace simba::cli
