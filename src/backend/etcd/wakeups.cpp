// Watches: a waiter's on its predecessor, an owner's on its own key
// (wakeups.hpp).
#include "backend/etcd/wakeups.hpp"

#include "backend/etcd/backend_class.hpp"

#include "sys/clock.hpp"

#include <algorithm>

namespace simba::backend::etcd {
namespace {

// A failed set-up is tried again no sooner: the timers still wake us.
constexpr int64_t k_retry_ms = 1000;
// The budget of one set-up (a read and the watch's start).
constexpr int64_t k_setup_ms = 1000;

// An owner watches its key for a forced release (the key rewritten
// revoked) or its end (deleted). Its own guards rewrite the key too: a
// wake-up on each would send one more guard each, two per guard due.
bool news_for_owner(const nlohmann::json& events) {
  for (const nlohmann::json& ev : events) {
    if (!ev.is_object() || text(ev, "type", "PUT") != "PUT" || !ev.contains("kv")) return true;
    const nlohmann::json& kv = ev["kv"];
    if (!kv.is_object() || decode_entry(unbase64(text(kv, "value"))).revoked) return true;
  }
  return false;
}

} // namespace

void EtcdWakeups::stop() {
  m_stream.reset();
  m_stale = true;
}

int EtcdWakeups::watch(const std::string& mutex, const std::string& contender, bool waiting) {
  bool same = mutex == m_mutex && contender == m_contender && waiting == m_waiting;
  if (same && !m_stale && m_stream && m_stream->connected()) return m_stream->fd();
  stop();
  m_mutex = mutex;
  m_contender = contender;
  m_waiting = waiting;
  if (sys::boottime_ms() < m_retry_at) return -1;
  int fd = start(mutex, contender, waiting);
  if (fd < 0) m_retry_at = sys::boottime_ms() + k_retry_ms;
  return fd;
}

int EtcdWakeups::start(const std::string& mutex, const std::string& contender, bool waiting) {
  int64_t deadline =
      sys::boottime_ms() + std::min(k_setup_ms, m_store.client().uri().timeout_ms);
  m_look = true;
  const std::string mine = queue_key(m_store.prefix(), mutex, contender);
  std::string watched = mine;
  int64_t revision = 0;
  nlohmann::json create;
  // The acquire that just queued us saw our predecessor, or made us the
  // owner: no reads (with --slots, Store::enqueue keeps no predecessor: a
  // waiter watches the key N places before its own, slots.cpp).
  std::optional<Predecessor> p = m_store.take_predecessor(mine, waiting);
  if (p) {
    watched = p->key;
    revision = p->revision;
  } else {
    Seen s = m_store.read(mutex, mine, deadline);
    if (s.call.ok() && !s.mine && waiting && m_join(mutex, contender))
      s = m_store.read(mutex, mine, deadline);
    if (!s.call.ok() || !s.mine) return -1; // not queued: the timers
    revision = s.revision;
    if (waiting && s.mine->entry.slots > 1) { // slots.cpp
      if (!slot_watch(m_store.client(), m_store.prefix(), mutex, *s.mine, create, deadline))
        return -1; // a slot may be ours: look
    } else if (waiting) {
      if (s.mine_is_oldest()) return -1; // ours to take: look_after_queueing()
      Call c = m_store.client().call(
          "/v3/kv/range", range_before(m_store.prefix(), mutex, s.mine->create_revision), false,
          deadline);
      std::vector<Kv> before = c.ok() ? kvs_of(c.json) : std::vector<Kv>{};
      if (before.empty()) return -1;
      watched = before.front().key;
    }
  }
  if (create.is_null()) {
    create = {{"key", base64(watched)}};
    if (waiting) create["filters"] = {"NOPUT"};
  }
  // From the revision that showed `watched` there: its deletion since then
  // comes as an event (or a cancel, once compacted: a look).
  create["start_revision"] = std::to_string(revision + 1);
  m_stream = std::make_unique<HttpConnection>(m_store.client().target());
  std::string token = m_store.client().token(deadline);
  nlohmann::json body = {{"create_request", create}};
  if (!m_stream->open_stream("/v3/watch", body.dump(), token, deadline).empty()) {
    m_stream.reset();
    return -1;
  }
  // Events after the read come; the ones before it were in the read.
  m_look = false;
  m_stale = false;
  return m_stream->fd();
}

bool EtcdWakeups::drain_wakeups() {
  if (!m_stream) return false;
  std::vector<std::string> lines;
  std::string why = m_stream->read_stream(lines);
  bool woke = false;
  for (const std::string& line : lines) {
    nlohmann::json j = parse_json(line);
    const nlohmann::json& r = j.is_object() && j.contains("result") ? j["result"] : j;
    if (!r.is_object()) continue;
    bool events = r.contains("events") && r["events"].is_array() && !r["events"].empty() &&
                  (m_waiting || news_for_owner(r["events"]));
    if (events || flag(r, "canceled") || number(r, "compact_revision") > 0) woke = true;
    if (j.contains("error")) woke = true;
  }
  if (!why.empty()) woke = true; // the stream broke: look, and watch again
  if (woke) stop();
  return woke;
}

std::optional<QueuePlace> EtcdWakeups::queue_place(const std::string& mutex,
                                                   const std::string& contender) {
  int64_t deadline = sys::boottime_ms() + k_setup_ms;
  Call c = m_store.client().call("/v3/kv/range", range_all(m_store.prefix(), mutex), false,
                                 deadline);
  if (!c.ok()) return std::nullopt;
  std::vector<Kv> kvs = kvs_of(c.json);
  const std::string mine = queue_key(m_store.prefix(), mutex, contender);
  // The first key holds the mutex; with slots, the numbered keys hold them.
  bool slots = !kvs.empty() && kvs.front().entry.slots > 1;
  std::vector<const Kv*> waiting;
  for (size_t i = slots ? 0 : 1; i < kvs.size(); ++i)
    if (!slots || kvs[i].entry.slot < 0) waiting.push_back(&kvs[i]);
  QueuePlace p;
  p.length = int(waiting.size());
  p.position = p.length + 1; // not queued: last
  for (size_t i = 0; i < waiting.size(); ++i)
    if (waiting[i]->key == mine) p.position = int(i) + 1;
  if (p.position > p.length) p.length = p.position;
  return p;
}

} // namespace simba::backend::etcd
