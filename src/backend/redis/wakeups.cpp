// Wake-ups and hand-overs over pub/sub (wakeups.hpp).
#include "backend/redis/wakeups.hpp"

#include "sys/clock.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace simba::backend::redis {
namespace {

// A broken subscription is set up again at most this often.
constexpr int64_t k_resubscribe_interval_ms = 1000;
// How long watch() may block: it runs in the driver's loop, also while CMD
// runs and its guard is due. Without the subscription's confirmation a
// release just after watch() could be missed; when it is slower than this,
// drain_wakeups() takes it later.
constexpr int64_t k_subscribe_wait_ms = 250;
// Joining or leaving the queue of waiters: best effort, bounded.
constexpr int64_t k_queue_timeout_ms = 250;

} // namespace

void PubSubWakeups::acquired(const std::string& mutex, const std::string& contender, const Reply& r,
                             int64_t ttl_ms, int64_t transition_ms) {
  // The script took the new owner out of the queue: no dequeue call.
  if (r.ok() && r.changed && mutex == m_queued && contender == m_queued_as) {
    m_queued.clear();
    m_score.clear();
  }
  // A quarantine: the server may have lost its data, our place in the
  // queue with it. Queue again (the next watch()), with our first score,
  // once per quarantine: when it ends, the first live waiter takes the
  // mutex (lua/common_queue.lua: fifo_refuses), in the order of arrival.
  const core::Lease& l = r.observed.lease;
  if (r.ok() && l.quarantine && mutex == m_queued && l.transition_at != m_requeued_for) {
    m_requeued_for = l.transition_at;
    m_queued.clear();
  }
  m_terms = {std::to_string(ttl_ms), std::to_string(transition_ms)};
}

// A second connection, subscribed to the mutex's channels. Set up when
// first asked for (only waiters and long-running owners need it), and
// again at most once a second after it broke. Two channels: the mutex's own
// (a forced release tells the owner) and the contender's wake-up channel,
// on which a release wakes the first of the queued waiters
// (lua/common.lua).
int PubSubWakeups::watch(const std::string& mutex, const std::string& contender, bool waiting) {
  std::string channel = channel_name(mutex, "released");
  if (channel != m_channel) {
    leave_queue();
    m_sub.close();
    m_channel = channel;
    m_wake_channel = channel_name(mutex, "wake:" + contender);
    m_sub_mutex = mutex;
    m_sub_contender = contender;
    m_resubscribe_at = 0;
  }
  // Sentinel: the subscription follows the master the requests go to (a
  // message published there does not reach an old master that Sentinel
  // has not turned into a replica yet). Queue again once subscribed there.
  if (m_sub.is_open() && m_sub_where != m_client.where_of(m_sub_mutex)) {
    m_sub.close();
    m_queued.clear();
    m_resubscribe_at = 0;
  }
  if (m_sub.is_open() || subscribe()) {
    // Queue only once subscribed: a release then always finds us listening.
    if (waiting && m_queued.empty()) {
      std::vector<std::string> args{contender};
      args.insert(args.end(), m_terms.begin(), m_terms.end());
      // Queuing again in the same wait: with the first score (enqueue.lua).
      bool again = !m_score.empty() && m_score_of == mutex + '\n' + contender;
      if (!m_terms.empty()) {
        args.push_back(m_holder);
        args.push_back(m_gives_up_at > 0 ? std::to_string(m_gives_up_at) : "");
        if (again) args.push_back(m_score);
      }
      Reply r = m_client.run(lua::k_enqueue, mutex, args, k_queue_timeout_ms);
      if (r.ok()) m_queued = mutex;
      if (r.ok() && !again) {
        m_score = std::to_string(r.observed.now * 1000);
        m_score_of = mutex + '\n' + contender;
      }
      m_queued_as = contender;
      m_queued_terms = m_terms;
      // The script read the lease once we were queued.
      m_look = !held_by_other(r, contender);
    } else if (!waiting) {
      leave_queue();
    }
    return m_sub.fd();
  }
  return -1;
}

void PubSubWakeups::leave_queue() {
  m_score.clear(); // the next wait is a new arrival
  if (m_queued.empty()) return;
  std::string mutex = std::move(m_queued);
  m_queued.clear();
  std::vector<std::string> args{m_queued_as};
  args.insert(args.end(), m_queued_terms.begin(), m_queued_terms.end());
  m_client.run(lua::k_dequeue, mutex, args, k_queue_timeout_ms); // best effort
}

// One script call (lua/place.lua), for a notice only.
std::optional<QueuePlace> PubSubWakeups::queue_place(const std::string& mutex,
                                                     const std::string& contender) {
  std::string error;
  Exchange x = m_client.call_script(lua::k_place, {m_client.hash_key(mutex)},
                                    m_client.script_args({contender}),
                                    m_client.call_deadline(k_queue_timeout_ms));
  const redisReply* r = m_client.answer(x, error);
  int64_t position = 0, length = 0;
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !as_int(r->element[0], position) ||
      !as_int(r->element[1], length))
    return std::nullopt;
  return QueuePlace{int(position), int(length)};
}

bool PubSubWakeups::subscribe() {
  int64_t now = sys::boottime_ms();
  if (now < m_resubscribe_at) return false;
  m_resubscribe_at = now + k_resubscribe_interval_ms;

  int64_t deadline = now + std::min(m_client.uri().timeout_ms, k_subscribe_wait_ms);
  // Channels are server-wide (SELECT does not matter to them): their
  // names carry the database (channel_name()).
  if (!m_client.connect_subscriber(m_sub, m_sub_mutex, deadline, m_sub_where).empty()) return false;
  // A message that comes after the confirmations was published after the
  // server handled the SUBSCRIBE, so after this moment: a hand-over's
  // lease is counted from here (see take_grant()).
  int64_t sent_at = sys::boottime_ms(); // the driver's clock
  if (!m_sub.send_only({{m_client.subscribe_command(), m_channel, m_wake_channel}}, deadline)
           .empty())
    return false;
  // Wait for the confirmations, so that a release right after this call is
  // not missed.
  for (int i = 0; i < 2; ++i) {
    ReplyPtr r;
    std::string err = m_sub.read_reply(deadline, r);
    // Unconfirmed, a release could find nobody listening and drop us from
    // the queue: try again later (the timed wake-up covers the meantime).
    if (!err.empty() || is_error(r.get()) || !is_subscribed(r.get())) {
      if (err.empty() && is_error(r.get())) m_client.learn_redirect(reply_text(r.get()));
      // An ACL without +subscribe (or the channels): the timer alone wakes
      // us, which the user should hear of once.
      if (err.empty() && is_error(r.get()) && !m_warned &&
          reply_text(r.get()).rfind("NOPERM", 0) == 0) {
        m_warned = true;
        std::string command = m_client.subscribe_command();
        for (char& c : command) c = char(std::tolower(static_cast<unsigned char>(c)));
        m_warning = "cannot use the release notification (" + reply_text(r.get()) +
                    "; the ACL needs +" + command +
                    " and the channels): waiting without it, hand-overs will be slow";
      }
      m_sub.close();
      return false;
    }
  }
  m_subscribed_at = sent_at;
  return true;
}

bool PubSubWakeups::drain_wakeups() {
  if (!m_sub.is_open()) return false;
  std::vector<ReplyPtr> replies;
  std::string err = m_sub.read_available(replies);
  bool ours = false;
  for (const ReplyPtr& r : replies) {
    if (is_error(r.get())) err = reply_text(r.get());
    // Redis Cluster: the slot moved to another master, which dropped our
    // sharded subscription (SUNSUBSCRIBE): subscribe again where it went.
    if (is_unsubscribed(r.get())) err = "unsubscribed";
    if (is_message_on(r.get(), m_channel)) ours = true;
    if (is_message_on(r.get(), m_wake_channel)) {
      ours = true;
      take_grant_message(reply_text(r->element[2]));
    }
  }
  if (!err.empty()) {
    // A release may have been missed: wake up and look. The next watch()
    // subscribes again (not at once: a server that is down would be
    // hammered).
    m_sub.close();
    m_resubscribe_at = sys::boottime_ms() + k_resubscribe_interval_ms;
    // Not listening, a release may have dropped us from the queue (or the
    // server lost it): queue again once subscribed again.
    m_queued.clear();
    return true;
  }
  return ours;
}

std::optional<Grant> PubSubWakeups::take_grant() {
  std::optional<Grant> g = std::move(m_grant);
  m_grant.reset();
  return g;
}

// "grant <now> <acquired_at> <ttl_at> <transition_at> <token>" on our wake
// channel: a release made us the owner (lua/common.lua: hand_over). The
// reply our acquire would have got, sent when we sent the SUBSCRIBE whose
// confirmation came before the message. The release took us out of the
// queue: no dequeue (which would end the lease). "1": only woken.
void PubSubWakeups::take_grant_message(const std::string& text) {
  long long f[5];
  char tail;
  if (std::sscanf(text.c_str(), "grant %lld %lld %lld %lld %lld%c", &f[0], &f[1], &f[2], &f[3],
                  &f[4], &tail) != 5)
    return;
  Grant g;
  g.reply.status = Reply::Status::ok;
  g.reply.changed = true;
  g.reply.observed.now = f[0];
  g.reply.observed.lease.owner_id = m_sub_contender;
  g.reply.observed.lease.acquired_at = f[1];
  g.reply.observed.lease.ttl_at = f[2];
  g.reply.observed.lease.transition_at = f[3];
  g.reply.observed.lease.fencing_token = f[4];
  g.sent_at_ms = m_subscribed_at;
  m_grant = std::move(g);
  if (m_queued == m_sub_mutex) m_queued.clear();
  m_score.clear();
}

// lua/common.lua: channel()
std::string PubSubWakeups::channel_name(const std::string& mutex, const std::string& suffix) const {
  return m_client.hash_key(mutex) + ":db" + std::to_string(m_client.uri().db) + ":" + suffix;
}

} // namespace simba::backend::redis
