// --once-per on etcd (README.md "Once per window"): the done record of the
// mutex's last run is a key of its own, "<prefix>!done/<mutex>" ('!'
// begins no mutex name), with no lease: simba never deletes it, the next
// window's run replaces it. It is written only by the mutex's owner, in a
// transaction that compares the owner's key (its create revision: still
// there, so still the oldest) and the record's mod revision as read: a
// record written meanwhile fails it, and the run is judged again.
#include "backend/etcd/backend_class.hpp"

#include "sys/clock.hpp"

#include <algorithm>

namespace simba::backend::etcd {
namespace {

std::string encode_done(const core::DoneRecord& d) {
  nlohmann::json j = {{"w", d.window_start}, {"l", d.label},     {"h", d.host},
                      {"t", d.token},        {"s", d.started_at}, {"p", d.period_ms},
                      {"o", d.offset_ms}};
  if (d.finished) {
    j["e"] = d.exit_code;
    j["f"] = d.finished_at;
  }
  return j.dump();
}

std::optional<core::DoneRecord> decode_done(const std::string& value) {
  nlohmann::json j = parse_json(value);
  if (!j.is_object()) return std::nullopt;
  core::DoneRecord d;
  d.window_start = number(j, "w");
  d.label = text(j, "l");
  d.host = text(j, "h");
  d.token = uint64_t(number(j, "t"));
  d.started_at = number(j, "s");
  d.period_ms = number(j, "p");
  d.offset_ms = number(j, "o");
  d.finished = j.contains("f");
  d.exit_code = int(number(j, "e"));
  d.finished_at = number(j, "f");
  return d;
}

} // namespace

EtcdBackend::DoneSeen EtcdBackend::read_done(const std::string& mutex, int64_t deadline) {
  DoneSeen d;
  d.call = m_store.client().call("/v3/kv/range", range_one(done_key(mutex)), false, deadline);
  if (!d.call.ok()) return d;
  const nlohmann::json& kvs = d.call.json.contains("kvs") ? d.call.json["kvs"] : nlohmann::json();
  if (!kvs.is_array() || kvs.empty()) return d;
  d.mod_revision = number(kvs[0], "mod_revision");
  d.record = decode_done(unbase64(text(kvs[0], "value")));
  return d;
}

// The record written if the contender's key (create revision `token`) is
// still there and the record unchanged since it was read (`mod_revision`,
// 0: none). False with an ok call: either changed.
Call EtcdBackend::write_done(const std::string& mutex, const std::string& contender,
                             uint64_t token, int64_t mod_revision, const core::DoneRecord& d,
                             bool& done, int64_t deadline) {
  const std::string mine = key(mutex, contender), record = done_key(mutex);
  nlohmann::json compare = {
      {{"target", "CREATE"}, {"result", "EQUAL"}, {"key", base64(mine)},
       {"create_revision", std::to_string(token)}},
      {{"target", "MOD"}, {"result", "EQUAL"}, {"key", base64(record)},
       {"mod_revision", std::to_string(mod_revision)}}};
  nlohmann::json put = {{"key", base64(record)}, {"value", base64(encode_done(d))}};
  Call c = m_store.client().call(
      "/v3/kv/txn", {{"compare", compare}, {"success", {{{"request_put", put}}}}}, true, deadline);
  done = c.ok() && flag(c.json, "succeeded");
  return c;
}

// The acquire first (the queue decides who owns), then the record read:
// once ours, the mutex's last run has written its record (release_once
// finishes it before its key goes). A new ownership whose window may not
// run ends at once (our key goes); one that may run writes the record.
Reply EtcdBackend::acquire_once(const std::string& mutex, const std::string& contender,
                                int64_t ttl_ms, int64_t transition_ms, const core::OncePer& once,
                                const std::string& label, const std::string& host,
                                int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  auto left = [&] { return std::max<int64_t>(deadline - sys::boottime_ms(), 1); };
  Reply r;
  for (int i = 0; i < 3; ++i) {
    // The lease we owned before this call, if any (0: none).
    auto before = m_places.find(key(mutex, contender));
    uint64_t had = before != m_places.end() && before->second.owner ? before->second.token : 0;
    // A take whose window may not run is no acquisition: "acquired" is
    // written once the run is recorded.
    m_defer_acquired = true;
    r = acquire(mutex, contender, ttl_ms, transition_ms, left());
    m_defer_acquired = false;
    if (!r.ok()) return r;
    DoneSeen d = read_done(mutex, deadline);
    if (!d.call.ok()) return failure(d.call);
    r.done = d.record;
    const core::Lease& l = r.observed.lease;
    // Waiting, or a renewal of the run (its record has our token).
    if (!l.owned_by(contender, r.observed.now) || (d.record && d.record->token == l.fencing_token))
      return r;
    int64_t now = r.observed.now;
    bool refused = (d.record && core::terms_differ(*d.record, once, now)) ||
                   !core::may_run(core::judge_window(d.record, core::Lease{}, now, once), once);
    if (refused) {
      Reply ended = release(mutex, contender, l.fencing_token, left());
      ended.done = d.record;
      // Taken by this call and ended at once: as if never taken (the
      // others' rule). One of an earlier call, left unrecorded, ended.
      if (ended.ok() && had != l.fencing_token) ended.changed = false;
      return ended;
    }
    core::DoneRecord started{core::judged_window(now, once), label, host, l.fencing_token, now};
    started.period_ms = once.period_ms;
    started.offset_ms = once.offset_ms;
    bool done = false;
    Call c = write_done(mutex, contender, l.fencing_token, d.mod_revision, started, done, deadline);
    if (!c.ok()) return failure(c); // the next try finds the lease ours, unrecorded
    if (done) {
      r.done = started;
      auto p = m_places.find(key(mutex, contender));
      int64_t queued = p != m_places.end() ? p->second.queued : 0;
      note_acquired(mutex, contender, l.fencing_token, queued ? sys::wall_ms() - queued : 0, {},
                    history_deadline());
      return r;
    }
    // A record written meanwhile, or our key gone: judge again.
  }
  return Reply::failure(Reply::Status::failed, "the done record kept changing");
}

// The record finished (the run's token only), then the release: a waiter
// that owns next reads the finished record.
Reply EtcdBackend::release_once(const std::string& mutex, const std::string& contender,
                                uint64_t token, int exit_code, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  Seen s = m_store.read(mutex, key(mutex, contender), deadline);
  if (!s.call.ok()) return failure(s.call);
  DoneSeen d = read_done(mutex, deadline);
  if (!d.call.ok()) return failure(d.call);
  std::optional<core::DoneRecord> record = d.record;
  if (record && record->token == token && !record->finished && s.mine_is_oldest() &&
      uint64_t(s.mine->create_revision) == token && !s.mine->entry.revoked) {
    core::DoneRecord finished = *record;
    finished.finished = true;
    finished.exit_code = exit_code;
    finished.finished_at = now();
    bool done = false;
    Call c = write_done(mutex, contender, token, d.mod_revision, finished, done, deadline);
    if (!c.ok()) return failure(c);
    if (done) record = finished;
  }
  Reply r = release(mutex, contender, token, std::max<int64_t>(deadline - sys::boottime_ms(), 1));
  r.done = record;
  return r;
}

Reply EtcdBackend::done_record(const std::string& mutex, int64_t timeout_ms) {
  int64_t deadline = sys::boottime_ms() + timeout_ms;
  Reply r = get(mutex, timeout_ms);
  if (!r.ok()) return r;
  DoneSeen d = read_done(mutex, deadline);
  if (!d.call.ok()) return failure(d.call);
  r.done = d.record;
  return r;
}

} // namespace simba::backend::etcd
