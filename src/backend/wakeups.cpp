#include "backend/wakeups.hpp"

namespace simba::backend {

namespace {

class NoWakeups final : public Wakeups {
public:
  int wait() override { return -1; }
  int own() override { return -1; }
  void settle() override {}
  Wake wake() override { return {}; }
};

} // namespace

Wakeups& no_wakeups() {
  static NoWakeups none;
  return none;
}

Wakeups& Backend::wakeups(const std::string&, const std::string&) { return no_wakeups(); }

void QueueWakeups::target(const std::string& mutex, const std::string& contender) {
  if (mutex == m_mutex && contender == m_contender) return;
  m_mutex = mutex;
  m_contender = contender;
  m_role = Role::none; // watch() leaves the former's queue
  m_fd = -1;
}

int QueueWakeups::wait() {
  // Back to waiting after an ownership that kept its place: to the end.
  if (m_role == Role::owner_in_queue) watch(m_mutex, m_contender, false);
  m_role = Role::waiter;
  return m_fd = watch(m_mutex, m_contender, true);
}

int QueueWakeups::own() {
  if (m_role == Role::waiter) m_role = Role::owner_in_queue;
  if (m_role == Role::owner_in_queue) return m_fd; // until settle(): no call
  m_role = Role::owner;
  return m_fd = watch(m_mutex, m_contender, false);
}

void QueueWakeups::settle() {
  upkeep();
  if (m_role != Role::owner_in_queue) return;
  m_role = Role::owner;
  m_fd = watch(m_mutex, m_contender, false);
}

Wake QueueWakeups::wake() {
  Wake w;
  if (!drain_wakeups()) return w;
  if (std::optional<Grant> g = take_grant()) {
    w.kind = Wake::Kind::grant;
    w.grant = std::move(*g);
  } else {
    w.kind = Wake::Kind::look;
  }
  return w;
}

} // namespace simba::backend
