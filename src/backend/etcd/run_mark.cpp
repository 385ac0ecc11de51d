// guard_mark(): schedule's record of its last run on etcd (backend_class.hpp).
#include "backend/etcd/backend_class.hpp"

#include "sys/clock.hpp"

#include <algorithm>
#include <cstdlib>

namespace simba::backend::etcd {

// schedule: the start of the mutex's last run is a key of its own,
// "<prefix>!run/<mutex>" ('!' begins no mutex name), with no lease: read
// before the guard, written after a guard that renewed (a run starts). Not
// in one transaction with the guard: a write lost between them costs the
// next leader its phase (it runs at once), never mutual exclusion.
Reply EtcdBackend::guard_mark(const std::string& mutex, const std::string& contender,
                              uint64_t token, int64_t ttl_ms, int64_t transition_ms, bool record,
                              int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  const std::string run_key = m_uri.prefix + "!run/" + mutex;
  Call c = m_store.client().call("/v3/kv/range", range_one(run_key), false, deadline);
  if (!c.ok()) return failure(c);
  std::optional<int64_t> last;
  std::vector<Kv> kvs = kvs_of(c.json);
  if (!kvs.empty()) {
    const nlohmann::json& raw = c.json["kvs"][0];
    last = std::strtoll(unbase64(text(raw, "value")).c_str(), nullptr, 10);
  }
  Reply r = guard(mutex, contender, token, ttl_ms, transition_ms,
                  std::max<int64_t>(deadline - sys::boottime_ms(), 1));
  r.last_run_at = last;
  if (record && r.ok() && r.changed) {
    nlohmann::json put = {{"key", base64(run_key)},
                          {"value", base64(std::to_string(r.observed.now))}};
    m_store.client().call("/v3/kv/put", put, true, deadline);
  }
  return r;
}

} // namespace simba::backend::etcd
