#pragma once
// The wake-ups of the etcd backend (backend/wakeups.hpp: the lifecycle): a
// waiter watches only the key just before its own in the queue (its
// predecessor's deletion wakes it, and nobody else: one wake-up per
// release however many wait); an owner watches its own key (a forced
// release rewrites it). A watch is a streamed HTTP answer on a connection
// of its own (http.hpp), polled by the driver. Any change, a broken stream
// or a cancelled watch (a compaction) is a "look": the contender asks
// again, and the next wait() sets the watch up anew.
#include "backend/etcd/http.hpp"
#include "backend/etcd/store.hpp"
#include "backend/wakeups.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace simba::backend::etcd {

class EtcdWakeups final : public QueueWakeups {
public:
  // Puts `contender` in the queue of `mutex` (a key on a lease of its own)
  // when it is not there yet: the driver acquires before it waits, but a
  // waiter may also queue first. False when it could not.
  using Join = std::function<bool(const std::string& mutex, const std::string& contender)>;
  EtcdWakeups(Store& store, Join join) : m_store(store), m_join(std::move(join)) {}
  bool look_after_queueing() const override { return m_look; }

private:
  int watch(const std::string& mutex, const std::string& contender, bool waiting) override;
  bool drain_wakeups() override;
  std::optional<QueuePlace> queue_place(const std::string& mutex,
                                        const std::string& contender) override;
  int start(const std::string& mutex, const std::string& contender, bool waiting);
  void stop();

  Store& m_store;
  Join m_join;
  std::unique_ptr<HttpConnection> m_stream;
  std::string m_mutex, m_contender;
  bool m_waiting = false;
  bool m_stale = true;    // set the watch up again at the next watch()
  bool m_look = true;     // see look_after_queueing()
  int64_t m_retry_at = 0; // after a failed set-up: not before then
};

} // namespace simba::backend::etcd
