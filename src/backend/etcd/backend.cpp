// The etcd Backend (README.md: the mapping of simba's leases onto etcd's,
// and why it is safe). Each contender has one key in its mutex's queue,
// on a lease of its own; the oldest key owns the mutex. Over 500 lines:
// the lease operations share their helpers (ours, theirs, relet) and the
// one Place of each contender (lease, keep-alive time, mod revision) and
// read best together; slots, once-per and history have files of their
// own, and only call into this one (or it into them) at a line each.
#include "backend/etcd/backend_class.hpp"

#include "backend/etcd/doctor.hpp"
#include "backend/holder.hpp"
#include "core/error.hpp"
#include "sys/clock.hpp"

#include <algorithm>

namespace simba::backend {

std::unique_ptr<Backend> open_etcd(EtcdUri uri) {
  auto backend = std::make_unique<etcd::EtcdBackend>(std::move(uri));
  backend->reach();
  return backend;
}

namespace etcd {

int64_t grant_seconds(int64_t length_ms) { return (std::max<int64_t>(length_ms, 1) + 999) / 1000 + 1; }

EtcdBackend::EtcdBackend(EtcdUri uri)
    : m_uri(std::move(uri)), m_store(m_uri), m_boot_to_wall(sys::wall_ms() - sys::boottime_ms()),
      m_wakeups(m_store, [this](const std::string& mutex, const std::string& contender) {
        return join(mutex, contender);
      }) {}

// A place in a queue goes with the process (wakeups.hpp, 6.): the leases of
// the places that do not own their mutex are revoked, which deletes their
// keys. An owner's stays: a lease simba acquire took outlives the process.
EtcdBackend::~EtcdBackend() {
  int64_t deadline = sys::boottime_ms() + std::min<int64_t>(m_uri.timeout_ms, 1000);
  for (const auto& [key, p] : m_places)
    if (!p.owner && !p.lease.empty()) m_store.revoke(p.lease, deadline);
}

bool EtcdBackend::covers(const Place& p, int64_t length_ms) const {
  if (p.kept_at <= 0 || p.granted_s <= 0) return false;
  // etcd keeps the lease granted_s from when its leader took the call, after
  // kept_at; 1% of that for the rate of its clock against ours.
  int64_t slack = std::max<int64_t>(100, p.granted_s * 10);
  return sys::boottime_ms() + length_ms + slack <= p.kept_at + p.granted_s * 1000;
}

Reply EtcdBackend::freed(uint64_t token) const {
  Reply r;
  r.status = Reply::Status::ok;
  r.observed.now = now();
  r.observed.lease.fencing_token = token;
  r.observed.lease.transition_at = r.observed.now;
  r.observed.lease.ttl_at = r.observed.now;
  return r;
}

bool EtcdBackend::ran_out(const std::string& key, uint64_t token) const {
  auto it = m_places.find(key);
  return it != m_places.end() && it->second.owner && it->second.token == token &&
         sys::boottime_ms() >= it->second.until;
}

int64_t EtcdBackend::now() const { return at(sys::boottime_ms()); }

// Opening connects to the first member that takes a connection, as the
// other backends' opening does: a cluster none of whose members can be
// reached is exit 69 at once, as a Redis or MySQL server that is down, not
// a wait that retries for ever. Only the connection: the first call goes
// on it, so this costs no round trip of its own (a read here cost every
// run about a tenth of its time). A member that takes the connection but
// answers with an error (no leader, a refused login) is there: the calls
// say what.
void EtcdBackend::reach() {
  if (std::string why = m_store.client().connect(sys::boottime_ms() + m_uri.timeout_ms);
      !why.empty())
    throw UnavailableError("cannot reach etcd at " + describe() + ": " + why);
}

void EtcdBackend::diagnose(Diagnosis& found, const DiagnoseOptions& options) {
  etcd::diagnose(m_uri, m_store.client(), found, options);
}

void EtcdBackend::set_holder(const Holder& h) {
  m_holder = encode_holder(h);
  m_gives_up = h.gives_up_at;
}

Wakeups& EtcdBackend::wakeups(const std::string& mutex, const std::string& contender) {
  m_wakeups.target(mutex, contender);
  return m_wakeups;
}

core::Observed EtcdBackend::ours(const Kv& mine, Place& p, int64_t sent_at, int64_t ttl_s,
                                 int64_t length_ms, int64_t transition_ms,
                                 bool acquiring) const {
  core::Observed o;
  // The backend's now is when the grant or keep-alive was sent: etcd keeps
  // the key at least ttl_s from when its leader took the request, which is
  // later (README.md, "Timing"). Never more than asked for.
  o.now = at(sent_at);
  if (p.token != uint64_t(mine.create_revision) || p.acquired_at == 0) {
    p.token = mine.create_revision;
    // A renewal by another process of the same owner (run --lease) keeps
    // the acquisition time the owner published; an acquisition is now.
    p.acquired_at = !acquiring && mine.entry.acquired ? mine.entry.acquired : o.now;
  }
  p.owner = true;
  int64_t length = std::min(length_ms, ttl_s * 1000);
  p.until = sent_at + length;
  core::Lease& l = o.lease;
  l.owner_id = mine.entry.owner;
  l.fencing_token = mine.create_revision;
  l.acquired_at = p.acquired_at;
  l.transition_at = o.now + length;
  l.ttl_at = std::max(l.transition_at - transition_ms, o.now);
  l.holding = mine.entry.holding;
  return o;
}

core::Observed EtcdBackend::theirs(const std::optional<Kv>& oldest, int64_t now, int64_t left_ms,
                                   int64_t cap) const {
  core::Observed o;
  o.now = now;
  if (!oldest) return o; // free: no key, no lease
  core::Lease& l = o.lease;
  const Entry& e = oldest->entry;
  int64_t wall = sys::wall_ms();
  // A mutex held with slots shows its marker (core/slots.hpp), a slot's row its holder.
  l.owner_id = e.revoked ? "" : e.slots > 1 && !oldest->row ? core::slot_marker(e.slots) : e.owner;
  l.fencing_token = oldest->create_revision;
  l.holding = e.holding;
  if (e.until > now) { // as its owner published it
    l.acquired_at = e.acquired;
    l.ttl_at = e.ttl_at;
    l.transition_at = e.until;
  } else {
    // Not published (a waiter at the head that has not acquired yet), or
    // run out while etcd keeps the key on: not free before the key goes
    // (whoever waits behind it is woken then).
    l.acquired_at = e.acquired ? e.acquired : now - std::max<int64_t>(0, wall - e.since);
    l.transition_at = now + (left_ms > 0 ? left_ms : 1000);
    l.ttl_at = l.transition_at;
  }
  if (cap > 0 && l.transition_at > cap) l.transition_at = l.ttl_at = std::max(cap, now + 50);
  return o;
}

int64_t EtcdBackend::left_ms(const Kv& kv, int64_t deadline) {
  int64_t granted = 0;
  int64_t left = m_store.seconds_left(kv.lease, deadline, &granted);
  if (left < 0) return 1; // gone now
  if (left == 0 && granted == 0) return 0; // unknown
  int64_t extra = granted * 1000 - std::min(kv.entry.length_ms, granted * 1000);
  return std::clamp<int64_t>(left * 1000 + 500 - extra, 1, std::max<int64_t>(kv.entry.length_ms, 1));
}

bool EtcdBackend::join(const std::string& mutex, const std::string& contender) {
  int64_t deadline = sys::boottime_ms() + std::min<int64_t>(m_uri.timeout_ms, 1000);
  const std::string k = key(mutex, contender);
  if (m_places.count(k)) return false; // queued before: its key is gone, acquire says why
  LeaseCall g = m_store.grant(grant_seconds(m_length_ms), deadline);
  if (!g.call.ok()) return false;
  Entry e{contender, m_holder, sys::wall_ms(), m_gives_up, m_length_ms, false, false};
  e.slots = slots_of(k);
  bool created = false;
  Seen s = m_store.enqueue(mutex, k, e, g.id, "", created, deadline);
  if (!s.call.ok() || !created) {
    m_store.revoke(g.id, deadline);
    return false;
  }
  Place& p = m_places[k];
  p.lease = g.id;
  p.granted_s = g.ttl_s;
  p.queued = e.since;
  p.kept_at = g.call.sent_at;
  if (s.mine) p.mod = p.created = s.mine->create_revision;
  return true;
}

Reply EtcdBackend::acquire(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                           int64_t transition_ms, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  m_length_ms = ttl_ms + transition_ms;
  Reply r = acquire_once_more(mutex, contender, ttl_ms + transition_ms, transition_ms, deadline);
  // Our place's lease ran out (a long stop): queue again with a new one.
  if (!r.ok() && !m_places.count(key(mutex, contender)) && sys::boottime_ms() < deadline &&
      r.status == Reply::Status::failed)
    r = acquire_once_more(mutex, contender, ttl_ms + transition_ms, transition_ms, deadline);
  after_acquire(mutex, contender, r, deadline); // history.cpp: its event; slots met
  return r;
}

Seen EtcdBackend::enqueue(const std::string& mutex, const std::string& contender, Place& p,
                          int64_t length_ms, int64_t transition_ms, bool& created,
                          int64_t& lease_sent, int64_t deadline) {
  LeaseCall g = m_store.grant(grant_seconds(length_ms), deadline);
  if (!g.call.ok()) return Seen{g.call, {}, {}, 0};
  p.lease = g.id;
  p.granted_s = g.ttl_s;
  p.kept_at = lease_sent = g.call.sent_at;
  // The times of the lease should the key be the oldest (it then owns the
  // mutex at once, and nothing else needs writing).
  Entry e{contender, m_holder, sys::wall_ms(), m_gives_up, length_ms, false, false};
  e.slots = slots_of(key(mutex, contender));
  p.queued = e.since;
  Place copy = p;
  core::Lease l = ours(Kv{}, copy, lease_sent, g.ttl_s, length_ms, transition_ms, true).lease;
  e.acquired = l.acquired_at;
  e.ttl_at = l.ttl_at;
  e.until = l.transition_at;
  // Its acquisition's event, written in the same transaction if it owns at
  // once (history.cpp); not with slots (a slot is taken by another write),
  // nor for --once-per (written once the run is recorded).
  std::string event =
      e.slots > 1 || m_defer_acquired ? "" : pending_event(contender, 0, l.acquired_at, 0);
  Seen s = m_store.enqueue(mutex, key(mutex, contender), e, p.lease, event, created, deadline);
  p.pending = s.pending;
  if (created && s.mine) p.created = s.mine->create_revision;
  return s;
}

// Queued already (woken, or trying again): a read, no write, on the way
// from a release to CMD; or, when our key is as we made it and its lease
// needs no keep-alive (below), the read in a transaction that writes our
// acquisition's event if our key is the oldest (history.cpp): one call.
Seen EtcdBackend::look(const std::string& mutex, const std::string& contender, Place& p,
                       int64_t length_ms, int64_t& checked, int64_t deadline) {
  const std::string k = key(mutex, contender);
  int64_t now_at = sys::boottime_ms();
  if (p.owner || p.created == 0 || p.mod != p.created || slots_of(k) > 1 || m_defer_acquired ||
      !covers(p, length_ms))
    return m_store.read(mutex, k, deadline);
  checked = now_at;
  Seen s = m_store.take(mutex, k, p.created, p.lease,
                        pending_event(contender, uint64_t(p.created), at(now_at),
                                      p.queued ? sys::wall_ms() - p.queued : 0),
                        deadline);
  p.pending = s.pending;
  return s;
}

Reply EtcdBackend::acquire_once_more(const std::string& mutex, const std::string& contender,
                                     int64_t length_ms, int64_t transition_ms, int64_t deadline) {
  const std::string k = key(mutex, contender);
  Place& p = m_places[k];
  int64_t lease_sent = 0, checked = 0; // checked: look()'s
  if (p.owner && sys::boottime_ms() >= p.until) {
    // Our lease ran out as we counted it (CMD is stopped by then), though
    // etcd may keep the key a little longer: it goes; we queue anew (new token).
    Call c = m_store.revoke(p.lease, deadline);
    if (!c.ok()) return failure(c);
    p = Place{};
  }
  bool created = false;
  Seen s;
  if (!p.lease.empty()) {
    s = look(mutex, contender, p, length_ms, checked, deadline);
    if (!s.call.ok()) return failure(s.call);
    if (!s.mine) { // its lease ran out meanwhile: acquire() queues anew
      m_places.erase(k);
      return Reply::failure(Reply::Status::failed, "our place in the etcd queue ran out");
    }
  } else {
    s = enqueue(mutex, contender, p, length_ms, transition_ms, created, lease_sent, deadline);
    if (!s.call.ok()) {
      // A lease that ran out takes no key: the next try grants a new one.
      if (p.lease.empty() || s.call.error.find("lease not found") != std::string::npos)
        m_places.erase(k);
      return failure(s.call);
    }
  }
  if (!s.mine) return Reply::failure(Reply::Status::failed, "our key in etcd vanished at once");
  bool took = checked && s.pending; // look()'s take: covers() held at `checked`
  if (s.mine->lease != p.lease) { // made by an earlier call whose answer we missed
    p.lease = s.mine->lease;
    p.kept_at = lease_sent = 0;
    took = false;
  }
  p.mod = s.mine->mod_revision;
  bool revoked = s.mine->entry.revoked;
  // Woken at the head of the queue with a lease kept alive recently enough
  // that etcd keeps it the whole length from now (README.md, "Timing"): no
  // keep-alive on the way from the release to CMD. The read showed the key
  // (so its lease) there after that keep-alive. A take that wrote our event
  // checked it before its call (an earlier `now`: an earlier deadline).
  if (!lease_sent && !revoked && s.mine_is_oldest() && (took || covers(p, length_ms)))
    lease_sent = took ? checked : sys::boottime_ms();
  if (!lease_sent && !revoked) {
    LeaseCall ka = m_store.keep_alive(p.lease, deadline);
    if (!ka.call.ok()) return failure(ka.call);
    if (ka.ttl_s <= 0) {
      m_places.erase(k);
      return Reply::failure(Reply::Status::failed, "our place in the etcd queue ran out");
    }
    p.kept_at = lease_sent = ka.call.sent_at;
    p.granted_s = ka.ttl_s;
  }
  Reply r;
  r.status = Reply::Status::ok;
  if (s.mine_is_oldest() && !revoked) {
    if (p.granted_s * 1000 < length_ms) // a renewal asking for more than etcd keeps it
      return relet(mutex, contender, s.mine->create_revision, length_ms, transition_ms, false,
                   false, std::max<int64_t>(deadline - sys::boottime_ms(), 1));
    r.observed = ours(*s.mine, p, lease_sent, p.granted_s, length_ms, transition_ms, true);
    m_store.remember({k, k, s.revision}); // the owner's watch starts there
    // An acquisition from the queue publishes its times with its first
    // guard: a write here would be on the way from the release to CMD (and
    // one at settle() on the way from CMD's end to the release). Until
    // then others see etcd's time to live (unchanged()).
    r.changed = true;
    return r;
  }
  p.owner = false;
  if (revoked) { // ours, revoked: no keep-alive was sent, and none is needed
    r.observed = theirs(s.oldest, now(), 0, 0);
    return r;
  }
  int64_t cap = at(lease_sent) + p.granted_s * 1000 - k_keep_alive_margin_ms;
  r.observed = theirs(s.oldest, at(lease_sent), 0, cap);
  return r;
}

bool EtcdBackend::publish(const Kv& mine, const core::Observed& o, int64_t deadline) {
  Entry e = mine.entry;
  e.acquired = o.lease.acquired_at;
  e.ttl_at = o.lease.ttl_at;
  e.until = o.lease.transition_at;
  bool done = false;
  Call c = m_store.rewrite(mine.key, mine.mod_revision, e, "", done, deadline);
  auto it = m_places.find(mine.key);
  if (done && it != m_places.end()) it->second.mod = header_revision(c);
  return done;
}

// Nothing changed: the lease as `s` shows it (its time left asked of etcd).
// A read that failed shows nothing: its failure, never "ok, no owner",
// which an owner's guard would take for a lost lease and stop CMD (a
// publish that ran out of time leaves its re-read no time).
Reply EtcdBackend::unchanged(const Seen& s, int64_t deadline) {
  if (!s.call.ok()) return failure(s.call);
  Reply r;
  r.status = Reply::Status::ok;
  // The time to live only when the owner's published times do not tell.
  int64_t left = s.oldest && s.oldest->entry.until <= now() ? left_ms(*s.oldest, deadline) : 0;
  r.observed = theirs(s.oldest, now(), left, 0);
  return r;
}

Reply EtcdBackend::guard(const std::string& mutex, const std::string& contender, uint64_t token,
                         int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) {
  return renew(mutex, contender, token, ttl_ms, transition_ms, false, timeout_ms);
}

Reply EtcdBackend::renew(const std::string& mutex, const std::string& contender, uint64_t token,
                         int64_t ttl_ms, int64_t transition_ms, bool never_earlier,
                         int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  const std::string k = key(mutex, contender);
  Seen s = m_store.read(mutex, k, deadline);
  if (!s.call.ok()) return failure(s.call);
  if (!s.mine || uint64_t(s.mine->create_revision) != token || s.mine->entry.revoked ||
      !s.mine_is_oldest())
    return unchanged(s, deadline);
  if (ran_out(k, token)) { // as we counted it: never renewed again
    m_store.revoke(s.mine->lease, deadline);
    m_places.erase(k);
    return freed(token);
  }
  // A lease only held gets its guard's length back (a new lease), as does
  // one asked to last longer than etcd keeps it.
  int64_t length = ttl_ms + transition_ms;
  // renew --lease (never_earlier) that found a step running in extend()'s
  // read, and its end now: the lease stays only held, as extend() keeps
  // one (guarded, the next step would be refused as if this one still ran).
  if (never_earlier && s.mine->entry.holding)
    return relet(mutex, contender, token, length, 0, true, true,
                 std::max<int64_t>(deadline - sys::boottime_ms(), 1));
  Place& known = m_places[k];
  if (s.mine->entry.holding || (known.lease == s.mine->lease && known.granted_s * 1000 < length))
    return relet(mutex, contender, token, length, transition_ms, false, false,
                 std::max<int64_t>(deadline - sys::boottime_ms(), 1));
  LeaseCall ka = m_store.keep_alive(s.mine->lease, deadline);
  if (!ka.call.ok()) return failure(ka.call);
  Reply r;
  r.status = Reply::Status::ok;
  if (ka.ttl_s <= 0) { // the lease ran out on the leader: gone
    m_places.erase(k);
    r.observed = theirs(std::nullopt, now(), 0, 0);
    r.error = "its etcd lease ran out";
    return r;
  }
  Place& p = known;
  p.lease = s.mine->lease;
  p.granted_s = ka.ttl_s;
  p.kept_at = ka.call.sent_at;
  r.observed = ours(*s.mine, p, ka.call.sent_at, ka.ttl_s, ttl_ms + transition_ms, transition_ms);
  // renew --lease: the times the guarding step counts on stay, while etcd
  // surely keeps the key that long (from this keep-alive's send).
  core::Lease& l = r.observed.lease;
  const Entry& before = s.mine->entry;
  if (never_earlier && before.until > l.transition_at &&
      before.until <= at(ka.call.sent_at) + ka.ttl_s * 1000) {
    l.transition_at = before.until;
    l.ttl_at = std::max(l.ttl_at, before.ttl_at);
    p.until = before.until - m_boot_to_wall;
  }
  if (!publish(*s.mine, r.observed, deadline))
    return unchanged(m_store.read(mutex, "", deadline), deadline);
  r.changed = true;
  return r;
}

Reply EtcdBackend::hold(const std::string& mutex, const std::string& contender, uint64_t token,
                        int64_t hold_ms, int64_t timeout_ms) {
  Reply r = relet(mutex, contender, token, hold_ms, 0, true, false, timeout_ms);
  if (r.changed) note_holding(mutex, token, history_deadline());
  return r;
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
    return relet(mutex, contender, token, ttl_ms + transition_ms, 0, true, true,
                 std::max<int64_t>(deadline - sys::boottime_ms(), 1));
  return renew(mutex, contender, token, ttl_ms, transition_ms, true,
               std::max<int64_t>(deadline - sys::boottime_ms(), 1));
}

Reply EtcdBackend::relet(const std::string& mutex, const std::string& contender, uint64_t token,
                         int64_t length_ms, int64_t transition_ms, bool holding,
                         bool only_if_holding, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  const std::string k = key(mutex, contender);
  // The steps of one lease and renew --lease rewrite its key from other
  // processes: a rewrite lost to one of them is tried again on what it
  // wrote (a step's end lost to a renewal left the lease guarded, with no
  // step to guard it, until it ran out), until the deadline (then the
  // read fails: the caller's failure).
  for (;;) {
    Seen s = m_store.read(mutex, k, deadline);
    if (!s.call.ok()) return failure(s.call);
    if (!s.mine || uint64_t(s.mine->create_revision) != token || s.mine->entry.revoked ||
        !s.mine_is_oldest() || (only_if_holding && !s.mine->entry.holding))
      return unchanged(s, deadline);
    // A hold needs no waiter's extra second: whole seconds, rounded up.
    LeaseCall g = m_store.grant(holding ? std::max<int64_t>((length_ms + 999) / 1000, 1)
                                        : grant_seconds(length_ms),
                                deadline);
    if (!g.call.ok()) return failure(g.call);
    Place& p = m_places[k];
    Kv mine = *s.mine;
    mine.entry.holding = holding;
    mine.entry.length_ms = length_ms;
    Place copy = p;
    core::Observed o = ours(mine, copy, g.call.sent_at, g.ttl_s, length_ms, transition_ms);
    Entry e = mine.entry;
    e.acquired = o.lease.acquired_at;
    e.ttl_at = o.lease.ttl_at;
    e.until = o.lease.transition_at;
    bool done = false;
    Call w = m_store.rewrite(k, s.mine->mod_revision, e, g.id, done, deadline);
    if (!done) {
      // A rewrite that may have been applied may have moved the key onto the
      // new lease: revoking it would delete the key under a running CMD.
      // Only one surely not applied frees the new lease at once.
      if (w.status != Reply::Status::indeterminate) m_store.revoke(g.id, deadline);
      if (!w.ok()) return failure(w);
      continue;
    }
    m_store.revoke(s.mine->lease, deadline); // it holds no key now; best effort
    p.lease = g.id;
    p.granted_s = g.ttl_s;
    p.kept_at = g.call.sent_at;
    p.mod = header_revision(w);
    mine.entry = e;
    Reply r;
    r.status = Reply::Status::ok;
    r.observed = ours(mine, p, g.call.sent_at, g.ttl_s, length_ms, transition_ms);
    r.changed = true;
    return r;
  }
}

// The owner's release, and a waiter's leaving: the lease revoked, which
// deletes the key. A revoked lease is left to end_revoked().
Reply EtcdBackend::release(const std::string& mutex, const std::string& contender, uint64_t token,
                           int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  const std::string k = key(mutex, contender);
  // Our own ownership, our key as we last read or wrote it: one write
  // deletes the key (which wakes the next waiter) unless it changed since
  // (a forced release rewrote it: the read below). Its lease, without a
  // key now, runs out (etcd revokes it then): a revoke would be one more
  // round trip and write before simba exits.
  auto own = m_places.find(k);
  if (own != m_places.end() && own->second.owner && own->second.mod > 0 && token != 0 &&
      own->second.token == token) {
    bool ran = ran_out(k, token);
    // With its event in the same write (history.cpp; a forced release that
    // came first has its own end written: history writes one per lease).
    bool done = false;
    Call c = ran ? m_store.remove(k, int64_t(token), own->second.mod, done, deadline)
                 : remove_noting_end(mutex, k, token, own->second.mod, done, deadline);
    if (!c.ok()) return failure(c);
    if (done) {
      m_places.erase(own);
      Reply r = freed(token);
      r.changed = !ran;
      return r;
    }
  }
  Seen s = m_store.read(mutex, k, deadline);
  if (!s.call.ok()) return failure(s.call);
  Reply r;
  r.status = Reply::Status::ok;
  if (!s.mine || s.mine->entry.revoked ||
      (token != 0 && uint64_t(s.mine->create_revision) != token)) {
    if (!s.mine) m_places.erase(k);
    return unchanged(s, deadline);
  }
  bool ran = ran_out(k, s.mine->create_revision);
  // The event first, while our key holds the mutex (history.cpp).
  if (s.mine_is_oldest() && !ran)
    note_ended(mutex, s.mine->create_revision, false, history_deadline());
  Call c = m_store.revoke(s.mine->lease, deadline);
  if (!c.ok()) return failure(c);
  m_places.erase(k);
  r = freed(s.mine->create_revision);
  r.changed = s.mine_is_oldest() && !ran;
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
Reply EtcdBackend::end_forced(const std::string& mutex, uint64_t token, bool by_owner,
                              int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  for (;;) {
    Seen s = m_store.read(mutex, "", deadline);
    if (!s.call.ok()) return failure(s.call);
    if (!s.oldest || s.oldest->entry.revoked ||
        (token != 0 && uint64_t(s.oldest->create_revision) != token))
      return unchanged(s, deadline);
    // Looking again (below), only at the lease found first: a new owner
    // that took the mutex meanwhile is not the one the caller forced.
    token = uint64_t(s.oldest->create_revision);
    if (s.oldest->entry.holding) {
      note_ended(mutex, s.oldest->create_revision, !by_owner, history_deadline());
      // The key, as read: a step that began meanwhile, or a renewal, moved
      // it onto a new lease (relet), and a revoke of the old one would end
      // nothing. Then look again; the old lease holds no key either way.
      bool removed = false;
      Call c = m_store.remove(s.oldest->key, s.oldest->create_revision, s.oldest->mod_revision,
                              removed, deadline);
      if (!c.ok()) return failure(c);
      if (!removed) continue;
      m_store.revoke(s.oldest->lease, deadline); // best effort: it holds no key now
      Reply r;
      r.status = Reply::Status::ok;
      r.changed = true;
      r.observed = theirs(std::nullopt, now(), 0, 0);
      r.observed.lease.fencing_token = s.oldest->create_revision;
      return r;
    }
    Entry e = s.oldest->entry;
    e.revoked = true;
    bool done = false;
    Call w = m_store.rewrite(s.oldest->key, s.oldest->mod_revision, e, "", done, deadline);
    if (!w.ok()) return failure(w);
    if (done) {
      note_ended(mutex, s.oldest->create_revision, true, history_deadline());
      Seen after = m_store.read(mutex, "", deadline);
      if (!after.call.ok()) { // revoked all the same: as we wrote it
        after = s;
        after.oldest->entry = e;
      }
      Reply r = unchanged(after, deadline);
      r.changed = true;
      return r;
    }
    // The key changed since our read: its owner's guard rewrote it (each
    // guard does), or it was released or revoked meanwhile. Look again,
    // within the call's deadline (the read fails after it): giving up here
    // would leave the lease valid and its CMD running after the force
    // reported nothing to revoke.
  }
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
  Reply r = freed(token);
  r.changed = true;
  return r;
}

Reply EtcdBackend::get(const std::string& mutex, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  Seen s = m_store.read(mutex, "", deadline);
  if (!s.call.ok()) return failure(s.call);
  if (s.oldest && s.oldest->entry.slots > 1 && !s.oldest->row)
    return slot_marker(mutex, s.oldest->entry.slots, deadline);
  return unchanged(s, deadline);
}

} // namespace etcd
} // namespace simba::backend
