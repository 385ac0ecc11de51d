// The Redis Backend: the lease operations, each one script run on the main
// connection; the wake-ups go to PubSubWakeups, the listing to inspect_mutexes().
#include "backend/redis/redis.hpp"

#include "backend/holder.hpp"
#include "backend/redis/client.hpp"
#include "backend/redis/doctor.hpp"
#include "backend/redis/listing.hpp"
#include "backend/redis/wakeups.hpp"

namespace simba::backend {
namespace {

using redis::Client;
namespace lua = redis::lua;

class RedisBackend final : public Backend {
public:
  explicit RedisBackend(RedisUri uri)
      : m_describe(redis_describe(uri)), m_client(std::move(uri)), m_wakeups(m_client) {}

  void open() { m_client.open(); }

  Reply acquire(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                int64_t transition_ms, int64_t timeout_ms) override {
    Reply r = m_client.run(
        lua::k_acquire, mutex,
        {contender, std::to_string(ttl_ms), std::to_string(transition_ms), m_holder}, timeout_ms);
    m_wakeups.acquired(mutex, contender, r, ttl_ms, transition_ms);
    return r;
  }

  Reply guard(const std::string& mutex, const std::string& contender, uint64_t token,
              int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    return m_client.run(
        lua::k_guard, mutex,
        {contender, std::to_string(ttl_ms), std::to_string(transition_ms), std::to_string(token)},
        timeout_ms);
  }

  Reply begin_step(const std::string& mutex, const std::string& contender, uint64_t token,
                   int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    return m_client.run(lua::k_guard, mutex,
                        {contender, std::to_string(ttl_ms), std::to_string(transition_ms),
                         std::to_string(token), "step"},
                        timeout_ms);
  }

  Reply hold(const std::string& mutex, const std::string& contender, uint64_t token,
             int64_t hold_ms, int64_t timeout_ms) override {
    return m_client.run(lua::k_guard, mutex,
                        {contender, std::to_string(hold_ms), "0", std::to_string(token), "1"},
                        timeout_ms);
  }

  Reply extend(const std::string& mutex, const std::string& contender, uint64_t token,
               int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    return m_client.run(lua::k_guard, mutex,
                        {contender, std::to_string(ttl_ms), std::to_string(transition_ms),
                         std::to_string(token), "keep"},
                        timeout_ms);
  }

  // A PING goes first, in the same write: Redis sends its pending answers
  // in the reverse order of the clients' first pending answer, so with the
  // PING's answer pending before the script runs, the message handing the
  // mutex over goes out before our answer. Without it, our answer could go
  // first, and on a busy CPU our exit could run before the server sent the
  // next owner its message: a slower hand-over.
  Reply release(const std::string& mutex, const std::string& contender, uint64_t token,
                int64_t timeout_ms) override {
    std::string code = m_exit_code ? std::to_string(*m_exit_code) : "";
    return m_client.run(lua::k_release, mutex, {contender, std::to_string(token), code}, timeout_ms,
                        true);
  }

  Reply end_revoked(const std::string& mutex, const std::string& contender, uint64_t token,
                    int64_t timeout_ms) override {
    return m_client.run(lua::k_end_revoked, mutex, {contender, std::to_string(token)}, timeout_ms);
  }

  Reply force_release(const std::string& mutex, uint64_t token, int64_t timeout_ms) override {
    return m_client.run(lua::k_force_release, mutex, {std::to_string(token), m_holder}, timeout_ms);
  }

  Reply release_lease(const std::string& mutex, uint64_t token, int64_t timeout_ms) override {
    return m_client.run(lua::k_force_release, mutex, {std::to_string(token), m_holder, "owner"},
                        timeout_ms);
  }

  bool has_slots() const override { return true; }

  Reply acquire_slot(const std::string& mutex, const std::string& contender, int slots,
                     int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    if (slots == 1) return acquire(mutex, contender, ttl_ms, transition_ms, timeout_ms);
    Reply r = m_client.run(lua::k_acquire_slot, mutex,
                           {contender, std::to_string(ttl_ms), std::to_string(transition_ms),
                            std::to_string(slots), m_holder},
                           timeout_ms, false, Client::Extra::slot);
    // A refusal queues nobody: simba exits 64.
    if (r.slots_recorded == 0) m_wakeups.acquired(mutex, contender, r, ttl_ms, transition_ms);
    return r;
  }

  Reply get(const std::string& mutex, int64_t timeout_ms) override {
    return m_client.run(lua::k_get, mutex, {}, timeout_ms);
  }

  Reply acquire_once(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                     int64_t transition_ms, const core::OncePer& once, const std::string& label,
                     const std::string& host, int64_t timeout_ms) override {
    Reply r = m_client.run(lua::k_acquire_once, mutex,
                           {contender, std::to_string(ttl_ms), std::to_string(transition_ms),
                            std::to_string(once.period_ms), std::to_string(once.offset_ms),
                            once.retry_failed ? "1" : "0", label, host, m_holder,
                            std::to_string(once.window)},
                           timeout_ms, false, Client::Extra::done);
    m_wakeups.acquired(mutex, contender, r, ttl_ms, transition_ms);
    return r;
  }

  // The record is kept until the next run replaces it (no TTL:
  // lua/common.lua).
  Reply release_once(const std::string& mutex, const std::string& contender, uint64_t token,
                     int exit_code, int64_t timeout_ms) override {
    return m_client.run(lua::k_release_once, mutex,
                        {contender, std::to_string(token), std::to_string(exit_code)}, timeout_ms,
                        true, Client::Extra::done);
  }

  Reply guard_mark(const std::string& mutex, const std::string& contender, uint64_t token,
                   int64_t ttl_ms, int64_t transition_ms, bool record,
                   int64_t timeout_ms) override {
    return m_client.run(lua::k_guard_mark, mutex,
                        {contender, std::to_string(ttl_ms), std::to_string(transition_ms),
                         std::to_string(token), record ? "1" : "0"},
                        timeout_ms, false, Client::Extra::last_run);
  }

  Reply done_record(const std::string& mutex, int64_t timeout_ms) override {
    return m_client.run(lua::k_get_once, mutex, {}, timeout_ms, false, Client::Extra::done);
  }

  History history(const std::string& mutex, int64_t since_ms, int64_t timeout_ms) override {
    return redis::read_history(m_client, mutex, since_ms, timeout_ms);
  }
  void set_exit_code(int code) override { m_exit_code = code; }

  Reply record_lost(const std::string& mutex, const std::string& contender, const LostLease& lost,
                    int64_t timeout_ms) override {
    return m_client.run(lua::k_lost, mutex,
                        {contender, std::to_string(lost.token), lost.reason, lost.by,
                         lost.exit_code ? std::to_string(*lost.exit_code) : "",
                         std::to_string(lost.held_ms), m_holder},
                        timeout_ms);
  }

  Reply record_skipped(const std::string& mutex, const std::string& contender, const SkippedRun& s,
                       int64_t timeout_ms) override {
    return m_client.run(lua::k_skipped, mutex,
                        {contender, std::to_string(s.token), s.reason, s.by,
                         s.exit_code ? std::to_string(*s.exit_code) : "",
                         s.held_ms ? std::to_string(*s.held_ms) : "", std::to_string(s.waited_ms),
                         m_holder},
                        timeout_ms);
  }

  Listing inspect(const std::string& mutex, int64_t timeout_ms) override {
    return redis::inspect_mutexes(m_client, mutex, timeout_ms);
  }

  // Sent with every acquire (the script writes it only with a new lease)
  // and with a place in the queue (a hand-over writes it then).
  void set_holder(const Holder& h) override {
    m_holder = encode_holder(h);
    m_wakeups.set_holder(m_holder, h.gives_up_at);
  }

  Wakeups& wakeups(const std::string& mutex, const std::string& contender) override {
    m_wakeups.target(mutex, contender);
    return m_wakeups;
  }

  // simba doctor (redis/doctor.hpp).
  void diagnose(Diagnosis& found, const DiagnoseOptions& options) override {
    redis::diagnose(m_client, found, options);
  }
  bool mark_new(int64_t timeout_ms, std::string& why) {
    return redis::mark_database_new(m_client, timeout_ms, why);
  }

  int64_t call_timeout_ms() const override { return m_client.uri().timeout_ms; }
  std::string describe() const override { return m_describe; }

private:
  std::string m_describe; // the URI without the password
  Client m_client;        // before m_wakeups: leaving the queue at the end needs it
  redis::PubSubWakeups m_wakeups;
  std::string m_holder;           // set_holder(), encoded; "" when not set
  std::optional<int> m_exit_code; // set_exit_code(), for the release's history event
};

} // namespace

bool init_new_redis_database(Backend& backend, int64_t timeout_ms, std::string& why) {
  auto* redis = dynamic_cast<RedisBackend*>(&backend);
  if (!redis) {
    why = backend.describe() + " is no Redis backend: only Redis keeps a marker to write";
    return false;
  }
  return redis->mark_new(timeout_ms, why);
}

std::unique_ptr<Backend> open_redis(RedisUri uri) {
  auto backend = std::make_unique<RedisBackend>(std::move(uri));
  backend->open();
  return backend;
}

} // namespace simba::backend
