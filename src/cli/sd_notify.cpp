// systemd's notification protocol, and what simba lead tells it
// (sd_notify.hpp).
#include "cli/sd_notify.hpp"

#include "core/contend_period.hpp"
#include "core/duration.hpp"
#include "core/names.hpp"
#include "sys/clock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace simba::cli {

namespace {

std::string take_env(const char* name) {
  const char* v = std::getenv(name);
  std::string value = v ? v : "";
  ::unsetenv(name);
  return value;
}

// A whole positive number, or 0.
int64_t positive(const std::string& text) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  return std::strtoll(text.c_str(), nullptr, 10);
}

// When the lease in `o` was acquired, on the local wall clock: backend
// times only as a difference from the backend's own now.
std::string since(const core::Observed& o) {
  return core::format_utc(sys::wall_ms() - (o.now - o.lease.acquired_at));
}

} // namespace

SdNotify SdNotify::from_environment() {
  SdNotify n;
  std::string path = take_env("NOTIFY_SOCKET");
  std::string usec = take_env("WATCHDOG_USEC");
  std::string pid = take_env("WATCHDOG_PID");
  if (path.empty() || path.size() >= sizeof(n.m_addr.sun_path)) return n;
  if (path[0] != '/' && path[0] != '@') return n; // not a socket systemd names
  n.m_addr.sun_family = AF_UNIX;
  memcpy(n.m_addr.sun_path, path.data(), path.size());
  if (path[0] == '@') n.m_addr.sun_path[0] = '\0'; // abstract: no trailing NUL counted
  n.m_addr_len = socklen_t(offsetof(sockaddr_un, sun_path) + path.size() + (path[0] == '/'));
  n.m_fd.reset(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  bool ours = pid.empty() || positive(pid) == int64_t(getpid());
  int64_t every = positive(usec) / 2000;
  if (ours && positive(usec) > 0) n.m_watchdog_every_ms = every > 0 ? every : 1;
  return n;
}

void SdNotify::send(const std::string& message) const {
  if (!enabled()) return;
  ssize_t ignored = ::sendto(m_fd.get(), message.data(), message.size(), MSG_NOSIGNAL,
                             reinterpret_cast<const sockaddr*>(&m_addr), m_addr_len);
  (void)ignored;
}

ServiceNotifier::ServiceNotifier(SdNotify notify, const core::ContenderConfig& config)
    : m_notify(std::move(notify)), m_config(config) {}

void ServiceNotifier::on_answer(int64_t now, core::Op op, const core::CallResult& r, bool leader) {
  if (r.status != core::CallResult::Status::ok) {
    // Ready already: say why no leader is known now (not READY on it).
    if (m_ready && !leader && op == core::Op::acquire)
      set_status("standby; the backend is failing: " + r.error);
    return;
  }
  bool first = !m_last_answer_at;
  m_last_answer_at = now;
  if (first) m_next_ping_at = now;
  // Only an acquire's or a guard's reply shows the lease we contend for.
  if (op != core::Op::acquire && op != core::Op::guard) return;
  const core::Observed& o = r.observed;
  if (leader && o.lease.owned_by(m_config.contender_id, o.now)) {
    set_status("leader since " + since(o) + " (token " + std::to_string(o.lease.fencing_token) +
               ")");
  } else if (!leader && o.lease.valid_at(o.now) && o.lease.owner_id != m_config.contender_id) {
    set_status("standby; leader is " + std::string(core::label_of(o.lease.owner_id)) +
               " since " + since(o));
  } else if (!leader && o.lease.revoked_at(o.now)) {
    set_status(o.lease.quarantine ? "standby; no leader (the backend's quarantine)"
                                  : "standby; no leader (the lease was revoked)");
  }
  on_timer(now);
}

void ServiceNotifier::set_status(const std::string& status) {
  if (status == m_status || m_stopping) return;
  m_status = status;
  m_notify.send((m_ready ? "" : "READY=1\n") + std::string("STATUS=") + status);
  m_ready = true;
}

void ServiceNotifier::on_stop() {
  if (m_stopping) return;
  m_stopping = true;
  m_notify.send("STOPPING=1");
}

// The backend answered within what a lease lasts (a standby polls about
// that often; a leader renews more often), plus a poll's jitter and one
// call's time.
bool ServiceNotifier::healthy(int64_t now) const {
  int64_t window = m_config.ttl_ms + m_config.transition_ms + core::ContendPeriod::k_jitter_high +
                   m_config.call_timeout_ms;
  return m_last_answer_at && now - *m_last_answer_at <= window;
}

std::optional<int64_t> ServiceNotifier::wake_at() const {
  if (m_notify.watchdog_every_ms() == 0 || !m_last_answer_at || !m_ready) return std::nullopt;
  return m_next_ping_at;
}

void ServiceNotifier::on_timer(int64_t now) {
  auto at = wake_at();
  if (!at || now < *at) return;
  m_next_ping_at = now + m_notify.watchdog_every_ms();
  if (healthy(now)) m_notify.send("WATCHDOG=1");
}

} // namespace simba::cli
