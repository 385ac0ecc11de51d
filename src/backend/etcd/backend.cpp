// The etcd Backend (README.md: the mapping of simba's leases onto etcd's,
// and why it is safe). Each contender has one key in its mutex's queue,
// on a lease of its own; the oldest key owns the mutex.
#include "backend/etcd/backend_class.hpp"

#include "backend/holder.hpp"
#include "sys/clock.hpp"

#include <algorithm>

namespace simba::backend {

std::unique_ptr<Backend> open_etcd(EtcdUri uri) {
  return std::make_unique<etcd::EtcdBackend>(std::move(uri));
}

namespace etcd {

int64_t grant_seconds(int64_t length_ms) { return (std::max<int64_t>(length_ms, 1) + 999) / 1000 + 1; }

EtcdBackend::EtcdBackend(EtcdUri uri)
    : m_uri(std::move(uri)), m_store(m_uri), m_boot_to_wall(sys::wall_ms() - sys::boottime_ms()),
      m_wakeups(m_store) {}

// A place in a queue goes with the process (wakeups.hpp, 6.): the leases of
// the places that do not own their mutex are revoked, which deletes their
// keys. An owner's stays: a lease simba acquire took outlives the process.
EtcdBackend::~EtcdBackend() {
  int64_t deadline = sys::boottime_ms() + std::min<int64_t>(m_uri.timeout_ms, 1000);
  for (const auto& [key, p] : m_places)
    if (!p.owner && !p.lease.empty()) m_store.revoke(p.lease, deadline);
}

int64_t EtcdBackend::now() const { return at(sys::boottime_ms()); }

void EtcdBackend::set_holder(const Holder& h) {
  m_holder = encode_holder(h);
  m_gives_up = h.gives_up_at;
}

Wakeups& EtcdBackend::wakeups(const std::string& mutex, const std::string& contender) {
  m_wakeups.target(mutex, contender);
  return m_wakeups;
}

core::Observed EtcdBackend::ours(const Kv& mine, Place& p, int64_t sent_at, int64_t ttl_s,
                                 int64_t length_ms, int64_t transition_ms) const {
  core::Observed o;
  o.now = now();
  if (p.token != uint64_t(mine.create_revision)) {
    p.token = mine.create_revision;
    p.acquired_at = o.now;
  }
  p.owner = true;
  core::Lease& l = o.lease;
  l.owner_id = mine.entry.owner;
  l.fencing_token = mine.create_revision;
  l.acquired_at = p.acquired_at;
  // etcd keeps the key at least ttl_s from when the leader took the
  // request, which is after we sent it: counted from the send, never more
  // than asked for (README.md, "Timing").
  l.transition_at = at(sent_at) + std::min(length_ms, ttl_s * 1000);
  l.ttl_at = std::max(l.transition_at - transition_ms, std::min(o.now, l.transition_at));
  l.holding = mine.entry.holding;
  return o;
}

core::Observed EtcdBackend::theirs(const std::optional<Kv>& oldest, int64_t left_ms,
                                   int64_t cap) const {
  core::Observed o;
  o.now = now();
  if (!oldest) return o; // free: no key, no lease
  core::Lease& l = o.lease;
  const Entry& e = oldest->entry;
  l.owner_id = e.revoked ? "" : e.owner;
  l.fencing_token = oldest->create_revision;
  l.holding = e.holding;
  l.acquired_at = o.now - std::max<int64_t>(0, sys::wall_ms() - e.since);
  int64_t end = o.now + (left_ms > 0 ? left_ms : std::max<int64_t>(e.length_ms, 1000));
  if (cap > 0) end = std::min(end, cap);
  l.transition_at = std::max(end, o.now + 50);
  l.ttl_at = l.transition_at;
  return o;
}

Reply EtcdBackend::acquire(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                           int64_t transition_ms, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  Reply r = acquire_once_more(mutex, contender, ttl_ms + transition_ms, transition_ms, deadline);
  // Our place's lease ran out (a long stop): queue again with a new one.
  if (!r.ok() && !m_places.count(key(mutex, contender)) && sys::boottime_ms() < deadline &&
      r.status == Reply::Status::failed)
    r = acquire_once_more(mutex, contender, ttl_ms + transition_ms, transition_ms, deadline);
  return r;
}

Reply EtcdBackend::acquire_once_more(const std::string& mutex, const std::string& contender,
                                     int64_t length_ms, int64_t transition_ms, int64_t deadline) {
  const std::string k = key(mutex, contender);
  Place& p = m_places[k];
  int64_t lease_sent = 0;
  if (p.lease.empty()) {
    LeaseCall g = m_store.grant(grant_seconds(length_ms), deadline);
    if (!g.call.ok()) {
      m_places.erase(k);
      return failure(g.call);
    }
    p.lease = g.id;
    p.granted_s = g.ttl_s;
    lease_sent = g.call.sent_at;
  }
  Entry e{contender, m_holder, sys::wall_ms(), m_gives_up, length_ms, false, false};
  bool created = false;
  Seen s = m_store.enqueue(mutex, k, e, p.lease, created, deadline);
  if (!s.call.ok()) {
    // A lease that ran out takes no key: the next try grants a new one.
    if (s.call.error.find("lease not found") != std::string::npos) m_places.erase(k);
    return failure(s.call);
  }
  if (!s.mine) return Reply::failure(Reply::Status::failed, "our key in etcd vanished at once");
  if (s.mine->lease != p.lease) { // made by an earlier call whose answer we missed
    p.lease = s.mine->lease;
    lease_sent = 0;
  }
  bool revoked = s.mine->entry.revoked;
  if (!lease_sent && !revoked) {
    LeaseCall ka = m_store.keep_alive(p.lease, deadline);
    if (!ka.call.ok()) return failure(ka.call);
    if (ka.ttl_s <= 0) {
      m_places.erase(k);
      return Reply::failure(Reply::Status::failed, "our place in the etcd queue ran out");
    }
    lease_sent = ka.call.sent_at;
    p.granted_s = ka.ttl_s;
  }
  Reply r;
  r.status = Reply::Status::ok;
  if (s.mine_is_oldest() && !revoked) {
    r.observed = ours(*s.mine, p, lease_sent, p.granted_s, length_ms, transition_ms);
    r.changed = true;
    return r;
  }
  p.owner = false;
  int64_t cap = revoked ? 0 : at(lease_sent) + p.granted_s * 1000 - k_keep_alive_margin_ms;
  r.observed = theirs(s.oldest, 0, cap);
  return r;
}

// Nothing changed: the lease as `s` shows it (its time left asked of etcd).
Reply EtcdBackend::unchanged(const Seen& s, int64_t deadline) {
  Reply r;
  r.status = Reply::Status::ok;
  int64_t left_ms = 0;
  if (s.oldest) {
    int64_t left = m_store.seconds_left(s.oldest->lease, deadline);
    left_ms = left > 0 ? left * 1000 : 0;
  }
  r.observed = theirs(s.oldest, left_ms, 0);
  return r;
}

Reply EtcdBackend::guard(const std::string& mutex, const std::string& contender, uint64_t token,
                         int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  const std::string k = key(mutex, contender);
  Seen s = m_store.read(mutex, k, deadline);
  if (!s.call.ok()) return failure(s.call);
  if (!s.mine || uint64_t(s.mine->create_revision) != token || s.mine->entry.revoked ||
      !s.mine_is_oldest())
    return unchanged(s, deadline);
  LeaseCall ka = m_store.keep_alive(s.mine->lease, deadline);
  if (!ka.call.ok()) return failure(ka.call);
  Reply r;
  r.status = Reply::Status::ok;
  if (ka.ttl_s <= 0) { // the lease ran out on the leader: gone
    m_places.erase(k);
    r.observed = theirs(std::nullopt, 0, 0);
    r.error = "its etcd lease ran out";
    return r;
  }
  Place& p = m_places[k];
  p.lease = s.mine->lease;
  p.granted_s = ka.ttl_s;
  r.observed = ours(*s.mine, p, ka.call.sent_at, ka.ttl_s, ttl_ms + transition_ms, transition_ms);
  r.changed = true;
  return r;
}

Reply EtcdBackend::hold(const std::string& mutex, const std::string& contender, uint64_t token,
                        int64_t hold_ms, int64_t timeout_ms) {
  return relet(mutex, contender, token, hold_ms, 0, true, false, timeout_ms);
}

Reply EtcdBackend::begin_step(const std::string& mutex, const std::string& contender,
                              uint64_t token, int64_t ttl_ms, int64_t transition_ms,
                              int64_t timeout_ms) {
  return relet(mutex, contender, token, ttl_ms + transition_ms, transition_ms, false, true,
               timeout_ms);
}

// renew --lease: a lease only held is kept on for ttl + transition (a new
// lease); one a step runs under is guarded.
Reply EtcdBackend::extend(const std::string& mutex, const std::string& contender, uint64_t token,
                          int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  Seen s = m_store.read(mutex, key(mutex, contender), deadline);
  if (!s.call.ok()) return failure(s.call);
  if (s.mine && s.mine->entry.holding)
    return relet(mutex, contender, token, ttl_ms + transition_ms, transition_ms, true, true,
                 std::max<int64_t>(deadline - sys::boottime_ms(), 1));
  return guard(mutex, contender, token, ttl_ms, transition_ms,
               std::max<int64_t>(deadline - sys::boottime_ms(), 1));
}

Reply EtcdBackend::relet(const std::string& mutex, const std::string& contender, uint64_t token,
                         int64_t length_ms, int64_t transition_ms, bool holding,
                         bool only_if_holding, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  const std::string k = key(mutex, contender);
  Seen s = m_store.read(mutex, k, deadline);
  if (!s.call.ok()) return failure(s.call);
  if (!s.mine || uint64_t(s.mine->create_revision) != token || s.mine->entry.revoked ||
      !s.mine_is_oldest() || (only_if_holding && !s.mine->entry.holding))
    return unchanged(s, deadline);
  // A hold needs no waiter's extra second: whole seconds, rounded up.
  LeaseCall g = m_store.grant(holding ? (length_ms + 999) / 1000 : grant_seconds(length_ms),
                              deadline);
  if (!g.call.ok()) return failure(g.call);
  Entry e = s.mine->entry;
  e.holding = holding;
  e.length_ms = length_ms;
  bool done = false;
  Call w = m_store.rewrite(k, s.mine->mod_revision, e, g.id, done, deadline);
  if (!done) {
    m_store.revoke(g.id, deadline);
    if (!w.ok()) return failure(w);
    return unchanged(m_store.read(mutex, k, deadline), deadline);
  }
  m_store.revoke(s.mine->lease, deadline); // it holds no key now; best effort
  Place& p = m_places[k];
  p.lease = g.id;
  p.granted_s = g.ttl_s;
  Kv mine = *s.mine;
  mine.entry = e;
  Reply r;
  r.status = Reply::Status::ok;
  r.observed = ours(mine, p, g.call.sent_at, g.ttl_s, length_ms, transition_ms);
  r.changed = true;
  return r;
}

// The owner's release, and a waiter's leaving: the lease revoked, which
// deletes the key. A revoked lease is left to end_revoked().
Reply EtcdBackend::release(const std::string& mutex, const std::string& contender, uint64_t token,
                           int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  const std::string k = key(mutex, contender);
  Seen s = m_store.read(mutex, k, deadline);
  if (!s.call.ok()) return failure(s.call);
  Reply r;
  r.status = Reply::Status::ok;
  if (!s.mine || s.mine->entry.revoked ||
      (token != 0 && uint64_t(s.mine->create_revision) != token)) {
    if (!s.mine) m_places.erase(k);
    return unchanged(s, deadline);
  }
  Call c = m_store.revoke(s.mine->lease, deadline);
  if (!c.ok()) return failure(c);
  m_places.erase(k);
  r.changed = s.mine_is_oldest();
  r.observed.now = now();
  r.observed.lease.fencing_token = s.mine->create_revision;
  r.observed.lease.transition_at = r.observed.now;
  r.observed.lease.ttl_at = r.observed.now;
  return r;
}

Reply EtcdBackend::force_release(const std::string& mutex, uint64_t token, int64_t timeout_ms) {
  return end_forced(mutex, token, false, timeout_ms);
}

Reply EtcdBackend::release_lease(const std::string& mutex, uint64_t token, int64_t timeout_ms) {
  return end_forced(mutex, token, true, timeout_ms);
}

// A lease only held ends at once (its key's lease revoked); one that CMD
// may still run under is marked revoked, its key kept until its owner has
// stopped CMD (end_revoked) or its lease runs out: the queue behind it
// waits that long, so no second CMD starts early.
Reply EtcdBackend::end_forced(const std::string& mutex, uint64_t token, bool, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  Seen s = m_store.read(mutex, "", deadline);
  if (!s.call.ok()) return failure(s.call);
  if (!s.oldest || s.oldest->entry.revoked ||
      (token != 0 && uint64_t(s.oldest->create_revision) != token))
    return unchanged(s, deadline);
  Reply r;
  if (s.oldest->entry.holding) {
    Call c = m_store.revoke(s.oldest->lease, deadline);
    if (!c.ok()) return failure(c);
    r.status = Reply::Status::ok;
    r.changed = true;
    r.observed = theirs(std::nullopt, 0, 0);
    r.observed.lease.fencing_token = s.oldest->create_revision;
    return r;
  }
  Entry e = s.oldest->entry;
  e.revoked = true;
  bool done = false;
  Call w = m_store.rewrite(s.oldest->key, s.oldest->mod_revision, e, "", done, deadline);
  if (!w.ok()) return failure(w);
  r = unchanged(m_store.read(mutex, "", deadline), deadline);
  r.changed = done;
  return r;
}

Reply EtcdBackend::end_revoked(const std::string& mutex, const std::string& contender,
                               uint64_t token, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  const std::string k = key(mutex, contender);
  Seen s = m_store.read(mutex, k, deadline);
  if (!s.call.ok()) return failure(s.call);
  if (!s.mine || !s.mine->entry.revoked || uint64_t(s.mine->create_revision) != token)
    return unchanged(s, deadline);
  Call c = m_store.revoke(s.mine->lease, deadline);
  if (!c.ok()) return failure(c);
  m_places.erase(k);
  Reply r = unchanged(m_store.read(mutex, "", deadline), deadline);
  r.changed = true;
  return r;
}

Reply EtcdBackend::get(const std::string& mutex, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  Seen s = m_store.read(mutex, "", deadline);
  if (!s.call.ok()) return failure(s.call);
  return unchanged(s, deadline);
}

} // namespace etcd
} // namespace simba::backend
