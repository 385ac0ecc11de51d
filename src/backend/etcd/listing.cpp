// inspect(): every mutex with keys under the prefix (or one), its holder
// (the oldest key) and its waiters (the others, oldest first), for simba
// status. The holder's time left is asked of etcd (whole seconds).
#include "backend/etcd/backend_class.hpp"

#include "backend/holder.hpp"
#include "sys/clock.hpp"

#include <algorithm>

namespace simba::backend::etcd {

Listing EtcdBackend::inspect(const std::string& mutex, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  Listing out;
  Call c = m_store.client().call("/v3/kv/range", range_all(m_uri.prefix, mutex), false, deadline);
  if (!c.ok()) {
    out.error = c.error;
    return out;
  }
  out.ok = true;
  out.holders_kept = true;
  out.waiters_kept = true;
  out.now = now();
  std::vector<Kv> kvs = kvs_of(c.json); // oldest first
  for (const Kv& kv : kvs) {
    std::string name = mutex_of_key(m_uri.prefix, kv.key);
    if (name.empty() || (!mutex.empty() && name != mutex)) continue;
    auto it = std::find_if(out.mutexes.begin(), out.mutexes.end(),
                           [&](const MutexLease& m) { return m.mutex == name; });
    std::optional<Holder> holder =
        kv.entry.holder.empty() ? std::nullopt : decode_holder(kv.entry.holder);
    if (it == out.mutexes.end() && kv.entry.slots > 1) { // slots.cpp
      std::vector<Kv> mine;
      for (const Kv& other : kvs)
        if (mutex_of_key(m_uri.prefix, other.key) == name) mine.push_back(other);
      out.mutexes.push_back(slot_listing(name, mine, out.now, deadline));
      continue;
    }
    if (it != out.mutexes.end()) {
      if (!it->slots.empty()) continue; // listed by slot_listing
      Waiter w;
      w.owner_id = kv.entry.owner;
      w.since = kv.entry.since;
      w.holder = holder;
      if (kv.entry.gives_up) w.gives_up_at = kv.entry.gives_up;
      it->waiters.push_back(std::move(w));
      continue;
    }
    MutexLease m;
    m.mutex = name;
    int64_t left = kv.entry.until > out.now ? 0 : left_ms(kv, deadline);
    m.lease = theirs(kv, out.now, left, 0).lease;
    if (!kv.entry.revoked) m.holder = holder;
    out.mutexes.push_back(std::move(m));
  }
  if (!mutex.empty() && out.mutexes.empty()) { // never held, or free now
    MutexLease m;
    m.mutex = mutex;
    out.mutexes.push_back(std::move(m));
  }
  add_counters(out, mutex.empty(), deadline); // history.cpp: every mutex ever leased too
  std::sort(out.mutexes.begin(), out.mutexes.end(),
            [](const MutexLease& a, const MutexLease& b) { return a.mutex < b.mutex; });
  return out;
}

} // namespace simba::backend::etcd
