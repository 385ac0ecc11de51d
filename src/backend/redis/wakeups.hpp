#pragma once
// Wake-ups and hand-overs (backend/wakeups.hpp) over pub/sub: a second
// connection subscribed to the mutex's channels, the queue of waiters a
// release wakes one at a time (lua/common.lua: hand_over), and the grant
// message by which a release hands the mutex over to the first waiter.
// RedisBackend owns one and hands it out as its Backend::wakeups().
#include "backend/backend.hpp"
#include "backend/redis/client.hpp"
#include "backend/redis/connection.hpp"
#include "backend/wakeups.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace simba::backend::redis {

class PubSubWakeups final : public QueueWakeups {
public:
  // `client` (the requests: enqueue, dequeue) must outlive this.
  explicit PubSubWakeups(Client& client) : m_client(client) {}
  // The queue entry goes with the backend (wakeups.hpp, 6.).
  ~PubSubWakeups() override { leave_queue(); }
  PubSubWakeups(const PubSubWakeups&) = delete;
  PubSubWakeups& operator=(const PubSubWakeups&) = delete;

  // After every acquire: the script took a new owner out of the queue, and
  // the terms are those a release hands the mutex over on, should we queue.
  void acquired(const std::string& mutex, const std::string& contender, const Reply& r,
                int64_t ttl_ms, int64_t transition_ms);

  bool look_after_queueing() const override { return m_look; }

  // Who we are (backend/holder.hpp), and when we give up (0: never), sent
  // when we queue.
  void set_holder(std::string encoded, int64_t gives_up_at) {
    m_holder = std::move(encoded);
    m_gives_up_at = gives_up_at;
  }

private:
  // QueueWakeups' calls (wakeups.hpp).
  int watch(const std::string& mutex, const std::string& contender, bool waiting) override;
  bool drain_wakeups() override;
  std::optional<Grant> take_grant() override;
  std::string take_warning() override { return std::exchange(m_warning, std::string()); }
  std::optional<QueuePlace> queue_place(const std::string& mutex,
                                        const std::string& contender) override;

  void leave_queue();
  bool subscribe();
  void take_grant_message(const std::string& text);
  std::string channel_name(const std::string& mutex, const std::string& suffix) const;

  Client& m_client;
  Connection m_sub;           // the subscription of watch()
  std::string m_channel;      // <hash>:db<N>:released
  std::string m_wake_channel; // <hash>:db<N>:wake:<contender>
  std::string m_queued;       // the mutex whose queue we are in, if any
  std::string m_queued_as;
  std::string m_sub_mutex; // the mutex and contender of the subscription
  std::string m_sub_contender;
  std::string m_sub_where;                 // the server of the subscription (Client::where())
  int64_t m_subscribed_at = 0;             // sys::boottime_ms(): when the SUBSCRIBE was sent
  std::vector<std::string> m_terms;        // ttl and transition of our last acquire
  std::vector<std::string> m_queued_terms; // those we queued with
  // Our score in the queue while we wait (lua/enqueue.lua), and the mutex
  // and contender it is of: queuing again in the same wait keeps it.
  std::string m_score;
  std::string m_score_of;
  int64_t m_requeued_for = 0; // the end of the quarantine we queued again for
  std::optional<Grant> m_grant;            // see take_grant()
  int64_t m_resubscribe_at = 0;            // sys::boottime_ms()
  bool m_look = true;                      // see look_after_queueing()
  std::string m_holder;                    // see set_holder()
  int64_t m_gives_up_at = 0;               // see set_holder()
  std::string m_warning;                   // for take_warning(): said once
  bool m_warned = false;
};

} // namespace simba::backend::redis
