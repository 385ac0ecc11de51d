// --slots N on etcd (README.md "Slots"): the `etcdctl lock` queue
// generalised. The N oldest keys of the mutex own its N slots; a key
// among them is given a slot number (Entry::slot) by a transaction that
// compares the mod revision of every one of the N, so no number is given
// twice, and the numbers go to the keys in queue order, so each slot's
// tokens (create revisions) increase.
#include "backend/etcd/backend_class.hpp"

#include "backend/holder.hpp"
#include "core/slots.hpp"
#include "sys/clock.hpp"

#include <algorithm>

namespace simba::backend::etcd {
namespace {

// What one read of the N oldest keys and the contender's saw.
struct SlotSeen {
  Call call;
  std::vector<Kv> lowest; // the N oldest keys, oldest first
  std::optional<Kv> mine;
};

SlotSeen read_lowest(Client& client, const std::string& prefix, const std::string& mutex,
                     const std::string& key, int slots, int64_t deadline) {
  nlohmann::json ops = {{{"request_range", range_lowest(prefix, mutex, slots)}},
                        {{"request_range", range_one(key)}}};
  SlotSeen s;
  s.call = client.call("/v3/kv/txn", {{"success", ops}}, false, deadline);
  if (!s.call.ok()) return s;
  const nlohmann::json& rs = s.call.json["responses"];
  if (!rs.is_array() || rs.size() < 2) return s;
  s.lowest = kvs_of(member(rs[0], "response_range"));
  std::vector<Kv> mine = kvs_of(member(rs[1], "response_range"));
  if (!mine.empty()) s.mine = mine.front();
  return s;
}

// The keys that own a slot: the N oldest, up to the first of another N
// (a plain contender, or one with other slots, queued among them, is
// refused and leaves; nobody behind it owns meanwhile).
size_t owning(const std::vector<Kv>& lowest, int slots) {
  size_t n = 0;
  while (n < lowest.size() && n < size_t(slots) && lowest[n].entry.slots == slots) ++n;
  return n;
}

bool among(const std::vector<Kv>& kvs, size_t n, const std::string& key) {
  return std::any_of(kvs.begin(), kvs.begin() + long(n), [&](const Kv& kv) { return kv.key == key; });
}

// The create revisions (tokens) of `kvs`: the keys that still own.
std::vector<uint64_t> tokens_of(const std::vector<Kv>& kvs) {
  std::vector<uint64_t> out;
  for (const Kv& kv : kvs) out.push_back(uint64_t(kv.create_revision));
  return out;
}

} // namespace

int EtcdBackend::slots_of(const std::string& key) const {
  auto it = m_slots_of.find(key);
  return it == m_slots_of.end() ? 0 : it->second;
}

void EtcdBackend::leave_queue(const std::string& mutex, const std::string& contender,
                              int64_t deadline) {
  auto it = m_places.find(key(mutex, contender));
  if (it == m_places.end() || it->second.owner) return;
  if (!it->second.lease.empty()) m_store.revoke(it->second.lease, deadline);
  m_places.erase(it);
}

Reply EtcdBackend::acquire_slot(const std::string& mutex, const std::string& contender, int slots,
                                int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  m_length_ms = ttl_ms + transition_ms;
  m_slots_of[key(mutex, contender)] = slots;
  Reply r;
  // Again when our place's lease ran out, or a number was given meanwhile
  // (the compare of the claim failed): a few times, within the deadline.
  for (int i = 0; i < 4 && sys::boottime_ms() < deadline; ++i) {
    bool again = false;
    r = slot_once_more(mutex, contender, slots, ttl_ms + transition_ms, transition_ms, deadline,
                       again);
    if (!again) break;
  }
  return r;
}

Reply EtcdBackend::slot_once_more(const std::string& mutex, const std::string& contender,
                                  int slots, int64_t length_ms, int64_t transition_ms,
                                  int64_t deadline, bool& again) {
  const std::string k = key(mutex, contender);
  Place& p = m_places[k];
  if (p.owner && sys::boottime_ms() >= p.until) { // ran out as we counted it: queue anew
    Call c = m_store.revoke(p.lease, deadline);
    if (!c.ok()) return failure(c);
    p = Place{};
  }
  int64_t lease_sent = 0;
  if (p.lease.empty()) {
    bool created = false;
    Seen s = enqueue(mutex, contender, p, length_ms, transition_ms, created, lease_sent, deadline);
    if (!s.call.ok()) {
      if (p.lease.empty() || s.call.error.find("lease not found") != std::string::npos)
        m_places.erase(k);
      return failure(s.call);
    }
  }
  SlotSeen s = read_lowest(m_store.client(), m_uri.prefix, mutex, k, slots, deadline);
  if (!s.call.ok()) return failure(s.call);
  if (!s.mine) { // our place's lease ran out: queue anew
    m_places.erase(k);
    again = true;
    return Reply::failure(Reply::Status::failed, "our place in the etcd queue ran out");
  }
  Reply r;
  r.status = Reply::Status::ok;
  const Kv& oldest = s.lowest.empty() ? *s.mine : s.lowest.front();
  if (oldest.key != k && oldest.entry.slots != slots) {
    // Held with another N (or by a plain contender): refused, and our place
    // goes at once (nothing was taken).
    r.slots_recorded = std::max(oldest.entry.slots, 1);
    r.observed = theirs(oldest, now(), 0, 0);
    m_store.revoke(p.lease, deadline);
    m_places.erase(k);
    return r;
  }
  if (s.mine->lease != p.lease) { // made by an earlier call whose answer we missed
    p.lease = s.mine->lease;
    lease_sent = 0;
  }
  if (!lease_sent && !s.mine->entry.revoked) {
    LeaseCall ka = m_store.keep_alive(p.lease, deadline);
    if (!ka.call.ok()) return failure(ka.call);
    if (ka.ttl_s <= 0) {
      m_places.erase(k);
      again = true;
      return Reply::failure(Reply::Status::failed, "our place in the etcd queue ran out");
    }
    lease_sent = ka.call.sent_at;
    p.granted_s = ka.ttl_s;
  }
  size_t owners = owning(s.lowest, slots);
  if (!among(s.lowest, owners, k) || s.mine->entry.revoked) {
    p.owner = false;
    r.observed = first_free(s.lowest, owners, slots);
    // Shown ending in time for us to keep our place alive (backend.cpp).
    int64_t cap = at(lease_sent) + p.granted_s * 1000 - k_keep_alive_margin_ms;
    if (!s.mine->entry.revoked && r.observed.lease.transition_at > cap)
      r.observed.lease.transition_at = r.observed.lease.ttl_at = std::max(cap, now() + 50);
    return r;
  }
  Place copy = p;
  core::Observed o = ours(*s.mine, copy, lease_sent, p.granted_s, length_ms, transition_ms, true);
  bool done = s.mine->entry.slot >= 0 ? publish(*s.mine, o, deadline)
                                      : claim(s.lowest, owners, k, o, deadline);
  if (!done) { // another number was given, or a forced release, meanwhile: look again
    again = true;
    return Reply::failure(Reply::Status::failed, "the slots changed as we took one");
  }
  p = copy;
  r.observed = o;
  r.observed.lease.slot = s.mine->entry.slot >= 0 ? s.mine->entry.slot : m_claimed_slot;
  r.changed = true;
  note_acquired(mutex, contender, o.lease.fencing_token, p.queued ? sys::wall_ms() - p.queued : 0,
                tokens_of(s.lowest), history_deadline());
  return r;
}

// Gives a slot number to every owning key that has none yet (ours among
// them), the lowest free numbers in queue order, in one transaction that
// holds only while the N oldest keys are as read (a numbered one: still
// there; its owner's guard may rewrite it): a number given meanwhile, or a
// key gone (a key beyond them could then own), fails it.
// Queue order keeps each slot's tokens increasing: a key is numbered no
// later than any key behind it. Our key gets the times of `o` too.
bool EtcdBackend::claim(const std::vector<Kv>& lowest, size_t owners, const std::string& mine,
                        const core::Observed& o, int64_t deadline) {
  std::vector<bool> taken(size_t(lowest.front().entry.slots), false);
  for (size_t i = 0; i < owners; ++i)
    if (lowest[i].entry.slot >= 0 && size_t(lowest[i].entry.slot) < taken.size())
      taken[size_t(lowest[i].entry.slot)] = true;
  nlohmann::json compare = nlohmann::json::array(), puts = nlohmann::json::array();
  for (const Kv& kv : lowest) {
    // A numbered key keeps its number: only that it is still there counts
    // (its owner's guard rewrites it all the time, and a claim that lost to
    // each rewrite would leave a free slot untaken). A key without one must
    // be as read: another claim may have numbered it.
    if (kv.entry.slot >= 0)
      compare.push_back({{"target", "CREATE"}, {"result", "EQUAL"}, {"key", base64(kv.key)},
                         {"create_revision", std::to_string(kv.create_revision)}});
    else
      compare.push_back({{"target", "MOD"}, {"result", "EQUAL"}, {"key", base64(kv.key)},
                         {"mod_revision", std::to_string(kv.mod_revision)}});
  }
  size_t next = 0;
  for (size_t i = 0; i < owners; ++i) {
    if (lowest[i].entry.slot >= 0) continue;
    while (next < taken.size() && taken[next]) ++next;
    if (next >= taken.size()) return false; // cannot be: N keys, N numbers
    Entry e = lowest[i].entry;
    e.slot = int(next);
    taken[next] = true;
    if (lowest[i].key == mine) {
      m_claimed_slot = e.slot;
      e.acquired = o.lease.acquired_at;
      e.ttl_at = o.lease.ttl_at;
      e.until = o.lease.transition_at;
    }
    puts.push_back({{"request_put", {{"key", base64(lowest[i].key)},
                                     {"value", base64(encode_entry(e))},
                                     {"ignore_lease", true}}}});
  }
  Call c = m_store.client().call("/v3/kv/txn", {{"compare", compare}, {"success", puts}}, true,
                                 deadline);
  return c.ok() && flag(c.json, "succeeded");
}

// A waiter's view: the slot that frees first, as its owner shows it. A
// slot not numbered yet, or free (its taker is on its way), is shown as
// taken for a second more (core::k_slot_fallback_ms): the waiter looks
// again then, it does not spin.
core::Observed EtcdBackend::first_free(const std::vector<Kv>& lowest, size_t owners,
                                       int slots) const {
  int64_t t = now();
  std::optional<core::Observed> soonest;
  int numbered = 0;
  for (size_t i = 0; i < owners; ++i) {
    if (lowest[i].entry.slot < 0) continue;
    ++numbered;
    Kv row = lowest[i];
    row.row = true;
    core::Observed o = theirs(row, t, 0, 0);
    o.lease.slot = row.entry.slot;
    if (!soonest || o.lease.transition_at < soonest->lease.transition_at) soonest = o;
  }
  if (numbered < slots || !soonest) {
    core::Observed o = soonest ? *soonest : theirs(lowest.front(), t, 0, 0);
    o.lease.transition_at = o.lease.ttl_at = t + core::k_slot_fallback_ms;
    if (o.lease.owner_id.empty()) o.lease.owner_id = core::slot_marker(slots);
    return o;
  }
  return *soonest;
}

// The marker of a mutex with slots (core/slots.hpp), as get() shows it:
// owner "#slots:N", valid as long as the longest of its slots.
Reply EtcdBackend::slot_marker(const std::string& mutex, int slots, int64_t deadline) {
  Call c = m_store.client().call("/v3/kv/range", range_lowest(m_uri.prefix, mutex, slots), false,
                                 deadline);
  if (!c.ok()) return failure(c);
  Reply r;
  r.status = Reply::Status::ok;
  r.observed = marker_of(kvs_of(c.json), slots, now(), deadline).observed;
  return r;
}

// The marker and each slot's lease, from the N oldest keys.
EtcdBackend::SlotState EtcdBackend::marker_of(const std::vector<Kv>& lowest, int slots,
                                              int64_t t, int64_t deadline) {
  SlotState out;
  out.observed.now = t;
  core::Lease& m = out.observed.lease;
  out.slots.resize(size_t(slots));
  for (int k = 0; k < slots; ++k) out.slots[size_t(k)].lease.slot = k;
  size_t owners = owning(lowest, slots);
  for (size_t i = 0; i < owners; ++i) {
    const Kv& kv = lowest[i];
    Kv row = kv;
    row.row = true;
    int64_t left = kv.entry.until > t ? 0 : left_ms(kv, deadline);
    core::Lease l = theirs(row, t, left, 0).lease;
    m.transition_at = std::max(m.transition_at, l.transition_at);
    m.ttl_at = std::max(m.ttl_at, l.ttl_at);
    m.acquired_at = m.acquired_at ? std::min(m.acquired_at, l.acquired_at) : l.acquired_at;
    m.fencing_token = std::max(m.fencing_token, l.fencing_token);
    if (kv.entry.slot < 0 || kv.entry.slot >= slots) continue;
    SlotLease& s = out.slots[size_t(kv.entry.slot)];
    s.lease = l;
    s.lease.slot = kv.entry.slot;
    if (!kv.entry.revoked && !kv.entry.holder.empty()) s.holder = decode_holder(kv.entry.holder);
  }
  if (owners > 0) m.owner_id = core::slot_marker(slots);
  return out;
}

// status of a mutex with slots: the marker, each slot, and the keys that
// have none (waiters, and owners about to be numbered) as its waiters.
MutexLease EtcdBackend::slot_listing(const std::string& name, const std::vector<Kv>& kvs,
                                     int64_t t, int64_t deadline) {
  int slots = kvs.front().entry.slots;
  SlotState st = marker_of(kvs, slots, t, deadline);
  MutexLease m;
  m.mutex = name;
  m.lease = st.observed.lease;
  m.slots = std::move(st.slots);
  for (const Kv& kv : kvs) {
    if (kv.entry.slot >= 0) continue;
    Waiter w;
    w.owner_id = kv.entry.owner;
    w.since = kv.entry.since;
    if (!kv.entry.holder.empty()) w.holder = decode_holder(kv.entry.holder);
    if (kv.entry.gives_up) w.gives_up_at = kv.entry.gives_up;
    m.waiters.push_back(std::move(w));
  }
  return m;
}

// A waiter with slots watches, of the keys before its own, the one whose
// going makes it own when slots free in the order they were taken: the
// N-th before it. The first waiter (exactly N before it) watches every
// deletion of the mutex instead, since any owner's release frees its
// slot. `create` gets the watch; false: none needed (it owns a slot).
bool slot_watch(Client& client, const std::string& prefix, const std::string& mutex,
                const Kv& mine, nlohmann::json& create, int64_t deadline) {
  int slots = mine.entry.slots;
  nlohmann::json before = range_before(prefix, mutex, mine.create_revision);
  before["limit"] = std::to_string(slots + 1);
  Call c = client.call("/v3/kv/range", before, false, deadline);
  if (!c.ok()) return false;
  std::vector<Kv> kvs = kvs_of(c.json); // newest first
  if (int(kvs.size()) < slots) return false;
  if (int(kvs.size()) == slots) {
    nlohmann::json all = range_all(prefix, mutex);
    create = {{"key", all["key"]}, {"range_end", all["range_end"]}};
  } else {
    create = {{"key", base64(kvs[size_t(slots) - 1].key)}};
  }
  create["filters"] = {"NOPUT"};
  return true;
}

} // namespace simba::backend::etcd
