#pragma once
// The etcd Backend's class (backend.cpp; inspect() in listing.cpp).
#include "backend/etcd/etcd.hpp"
#include "backend/etcd/store.hpp"
#include "backend/etcd/wakeups.hpp"
#include "core/slots.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace simba::backend::etcd {

class EtcdBackend final : public Backend {
public:
  explicit EtcdBackend(EtcdUri uri);
  ~EtcdBackend() override;

  Reply acquire(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                int64_t transition_ms, int64_t timeout_ms) override;
  Reply guard(const std::string& mutex, const std::string& contender, uint64_t token,
              int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override;
  Reply guard_mark(const std::string& mutex, const std::string& contender, uint64_t token,
                   int64_t ttl_ms, int64_t transition_ms, bool record, int64_t timeout_ms) override;
  Reply hold(const std::string& mutex, const std::string& contender, uint64_t token,
             int64_t hold_ms, int64_t timeout_ms) override;
  Reply begin_step(const std::string& mutex, const std::string& contender, uint64_t token,
                   int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override;
  Reply extend(const std::string& mutex, const std::string& contender, uint64_t token,
               int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override;
  Reply release(const std::string& mutex, const std::string& contender, uint64_t token,
                int64_t timeout_ms) override;
  Reply force_release(const std::string& mutex, uint64_t token, int64_t timeout_ms) override;
  Reply release_lease(const std::string& mutex, uint64_t token, int64_t timeout_ms) override;
  Reply end_revoked(const std::string& mutex, const std::string& contender, uint64_t token,
                    int64_t timeout_ms) override;
  Reply get(const std::string& mutex, int64_t timeout_ms) override;
  // --once-per (once_per.cpp): the done record, a key of its own.
  Reply acquire_once(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                     int64_t transition_ms, const core::OncePer& once, const std::string& label,
                     const std::string& host, int64_t timeout_ms) override;
  Reply release_once(const std::string& mutex, const std::string& contender, uint64_t token,
                     int exit_code, int64_t timeout_ms) override;
  Reply done_record(const std::string& mutex, int64_t timeout_ms) override;
  // History and counters (history.cpp).
  History history(const std::string& mutex, int64_t since_ms, int64_t timeout_ms) override;
  void set_exit_code(int code) override { m_exit_code = code; }
  Reply record_lost(const std::string& mutex, const std::string& contender, const LostLease& lost,
                    int64_t timeout_ms) override;
  Reply record_skipped(const std::string& mutex, const std::string& contender,
                       const SkippedRun& skipped, int64_t timeout_ms) override;
  // --slots N (slots.cpp): the N oldest keys own the N slots.
  bool has_slots() const override { return true; }
  Reply acquire_slot(const std::string& mutex, const std::string& contender, int slots,
                     int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override;
  Listing inspect(const std::string& mutex, int64_t timeout_ms) override;
  void set_holder(const Holder& h) override;
  Wakeups& wakeups(const std::string& mutex, const std::string& contender) override;
  void diagnose(Diagnosis& found, const DiagnoseOptions& options) override;
  int64_t call_timeout_ms() const override { return m_uri.timeout_ms; }
  std::string describe() const override { return etcd_describe(m_uri); }
  // Throws UnavailableError when no member answers at all (backend.cpp).
  void reach();

private:
  // This process's place in a mutex's queue: its key's lease.
  struct Place {
    std::string lease;
    int64_t granted_s = 0;  // the lease's TTL as etcd granted it
    bool owner = false;     // the last reply showed the mutex ours
    uint64_t token = 0;     // of the ownership acquired_at belongs to
    int64_t acquired_at = 0;
    int64_t until = 0;      // boot clock: the end of the lease last shown ours
    int64_t queued = 0;     // epoch ms: its key was made (history's waited_ms)
    int64_t kept_at = 0;    // boot clock: when the last grant or keep-alive of `lease` was sent
    int64_t mod = 0;        // our key's mod revision as we last read or wrote it
    bool pending = false;   // its enqueue or take wrote its acquisition's event (history.cpp)
    int64_t created = 0;    // our key's create revision, as our enqueue made it
  };

  // The backend's clock: CLOCK_BOOTTIME (the driver's) moved onto the
  // calendar once per process, so that times read as epoch milliseconds.
  int64_t now() const;
  // The reply of a call that ended lease `token`: free now.
  Reply freed(uint64_t token) const;
  // The lease `token` of our place `key` ran out as we showed it to our
  // owner (etcd may keep the key a little longer).
  bool ran_out(const std::string& key, uint64_t token) const;
  int64_t at(int64_t boottime) const { return boottime + m_boot_to_wall; }
  // The lease of `p`, as last granted or kept alive, lasts `length_ms` from
  // now (with room for etcd's clock): its keep-alive can wait.
  bool covers(const Place& p, int64_t length_ms) const;

  // guard, and extend's guard (`never_earlier`: ttl_at and transition_at
  // stay where they were when that is later).
  Reply renew(const std::string& mutex, const std::string& contender, uint64_t token,
              int64_t ttl_ms, int64_t transition_ms, bool never_earlier, int64_t timeout_ms);
  // A new place in the queue of `mutex`: a lease granted (`lease_sent`:
  // when its request left), the key made on it with the times it would
  // have as the owner's (`created`: it was made now).
  Seen enqueue(const std::string& mutex, const std::string& contender, Place& p,
               int64_t length_ms, int64_t transition_ms, bool& created, int64_t& lease_sent,
               int64_t deadline);
  // A queued contender's look at its place: a read, or a take (`checked`:
  // when its lease was found to need no keep-alive).
  Seen look(const std::string& mutex, const std::string& contender, Place& p, int64_t length_ms,
            int64_t& checked, int64_t deadline);
  Reply acquire_once_more(const std::string& mutex, const std::string& contender,
                          int64_t length_ms, int64_t transition_ms, int64_t deadline);
  // The lease of `mine`, ours, proved by a grant or keep-alive sent at
  // `sent_at` (boot clock) that gave `ttl_s`; `acquiring`: by an acquire
  // (a new ownership starts now, unless `p` knows it).
  core::Observed ours(const Kv& mine, Place& p, int64_t sent_at, int64_t ttl_s, int64_t length_ms,
                      int64_t transition_ms, bool acquiring = false) const;
  // Writes the times of `o` (ours) into our key `mine`, keeping its
  // lease, unless the key changed since it was read (a forced release):
  // false then.
  bool publish(const Kv& mine, const core::Observed& o, int64_t deadline);
  // Someone else's lease (or a revoked one), as `oldest` shows it at `now`
  // (the backend's clock), ending in `left_ms` (0: unknown); no later than
  // `cap` (0: none), and never free (its key is there).
  core::Observed theirs(const std::optional<Kv>& oldest, int64_t now, int64_t left_ms,
                        int64_t cap) const;
  // How long the lease of `kv` has left as its owner counts it, from
  // etcd's time to live (whole seconds) less the extra second granted.
  int64_t left_ms(const Kv& kv, int64_t deadline);
  // The lease moved onto a new lease of `length_ms` (hold, a step's start):
  // the only way to change how long etcd keeps a key.
  Reply relet(const std::string& mutex, const std::string& contender, uint64_t token,
              int64_t length_ms, int64_t transition_ms, bool holding, bool only_if_holding,
              int64_t timeout_ms);
  // EtcdWakeups::Join: a place in the queue on a lease as long as the
  // last acquire asked for (10 s before any).
  bool join(const std::string& mutex, const std::string& contender);
  // --slots (slots.cpp). `again`: look once more (a number was given
  // meanwhile, or our place ran out).
  Reply slot_once_more(const std::string& mutex, const std::string& contender, int slots,
                       int64_t length_ms, int64_t transition_ms, int64_t deadline, bool& again);
  bool claim(const std::vector<Kv>& lowest, size_t owners, const std::string& mine,
             const core::Observed& o, int64_t deadline);
  core::Observed first_free(const std::vector<Kv>& lowest, size_t owners, int slots) const;
  Reply slot_marker(const std::string& mutex, int slots, int64_t deadline);
  struct SlotState {
    core::Observed observed; // the marker
    std::vector<SlotLease> slots;
  };
  SlotState marker_of(const std::vector<Kv>& lowest, int slots, int64_t now, int64_t deadline);
  MutexLease slot_listing(const std::string& name, const std::vector<Kv>& kvs, int64_t now,
                          int64_t deadline);
  // --once-per (once_per.cpp): the record as read, with its mod revision
  // (0: none).
  struct DoneSeen {
    Call call;
    std::optional<core::DoneRecord> record;
    int64_t mod_revision = 0;
  };
  std::string done_key(const std::string& mutex) const { return m_uri.prefix + "!done/" + mutex; }
  DoneSeen read_done(const std::string& mutex, int64_t deadline);
  Call write_done(const std::string& mutex, const std::string& contender, uint64_t token,
                  int64_t mod_revision, const core::DoneRecord& d, bool& done, int64_t deadline);
  // History (history.cpp): a mutex's record, and the leases whose end is
  // not written yet (by token).
  struct OpenLease {
    std::string owner, holder;
    int64_t at = 0;       // acquired: epoch ms
    bool counted = false; // its loss is counted (its holder's lost event)
    bool holding = false; // only held: its expiry is no loss
  };
  struct HistoryRecord {
    int64_t seq = 0, acquisitions = 0, losses = 0;
    std::map<uint64_t, OpenLease> open;
  };
  // Updates the record, appends the events to write; false: write nothing.
  using HistoryChange =
      std::function<bool(HistoryRecord&, bool exists, std::vector<HistoryEvent>&)>;
  std::string record_key(const std::string& mutex) const;
  std::string events_prefix(const std::string& mutex) const;
  static HistoryRecord decode_record(const nlohmann::json& j);
  static nlohmann::json encode_record(const HistoryRecord& r);
  // `fold_last`: the token of an acquisition the change writes itself
  // (its pending event is deleted, not folded).
  void write_history(const std::string& row, const HistoryChange& change, int64_t deadline,
                     uint64_t fold_last = 0);
  HistoryEvent event_of(const char* name, const std::string& owner, uint64_t token,
                        const std::string& holder) const;
  // The event of an acquisition by `contender` at `at` (epoch ms), to be
  // numbered later (Store::enqueue's and take's `event`); token 0: the
  // pending key's create revision (enqueue's).
  std::string pending_event(const std::string& contender, uint64_t token, int64_t at,
                            int64_t waited_ms) const;
  // Folds the pending events of `seen` into `r` (numbered "acquired"
  // events in `out`), but for `skip`'s: whether any was.
  static bool fold_pending(HistoryRecord& r, const std::vector<Store::Pending>& pending,
                           uint64_t skip, std::vector<HistoryEvent>& out);
  // history_ops() and the deletion of the pending events `pending`.
  nlohmann::json write_ops(const std::string& mutex, HistoryRecord& r,
                           std::vector<HistoryEvent>& events,
                           const std::vector<Store::Pending>& pending, std::string& value) const;
  void after_acquire(const std::string& mutex, const std::string& contender, const Reply& r,
                     int64_t deadline);
  void note_acquired(const std::string& mutex, const std::string& contender, uint64_t token,
                     int64_t waited_ms, const std::vector<uint64_t>& live, int64_t deadline);
  HistoryChange end_change(uint64_t token, bool forced) const;
  void note_ended(const std::string& mutex, uint64_t token, bool forced, int64_t deadline);
  // The owner's release and its event in one write (else one after the other).
  Call remove_noting_end(const std::string& mutex, const std::string& k, uint64_t token,
                         int64_t mod, bool& done, int64_t deadline);
  nlohmann::json history_ops(const std::string& mutex, HistoryRecord& r,
                             std::vector<HistoryEvent>& events, std::string& value) const;
  // The compare of a txn that the record of `mutex` is as seen at `mod`.
  nlohmann::json record_unchanged(const std::string& mutex, int64_t mod) const;
  void note_holding(const std::string& mutex, uint64_t token, int64_t deadline);
  void add_counters(Listing& out, bool all, int64_t deadline);
  // History's own budget: it never eats the operation's.
  int64_t history_deadline() const;
  // A plain contender that met slots (refused: 64) leaves the queue now.
  void leave_queue(const std::string& mutex, const std::string& contender, int64_t deadline);
  // The N a contender's key is made with (0: a plain one).
  int slots_of(const std::string& key) const;
  Reply end_forced(const std::string& mutex, uint64_t token, bool by_owner, int64_t timeout_ms);
  Reply unchanged(const Seen& s, int64_t deadline);
  static Reply failure(const Call& c) { return Reply::failure(c.status, c.error); }
  std::string key(const std::string& mutex, const std::string& contender) const {
    // A slot's row "m#k" names the same key as its mutex m (core/slots.hpp).
    return queue_key(m_uri.prefix, std::string(core::mutex_of_row(mutex)), contender);
  }

  EtcdUri m_uri;
  Store m_store;
  int64_t m_boot_to_wall = 0;
  std::string m_holder; // encode_holder()'s
  int64_t m_gives_up = 0;
  int64_t m_length_ms = 10000; // the last acquire's ttl + transition
  std::map<std::string, Place> m_places; // by key
  EtcdWakeups m_wakeups;
  std::map<std::string, int> m_slots_of; // by key: acquire_slot's N
  int m_claimed_slot = -1;               // the number claim() gave our key
  std::optional<int> m_exit_code;        // set_exit_code(): CMD's, for "released"
  bool m_defer_acquired = false; // acquire_once: "acquired" only once the run starts
};

// A lease asked for `length_ms` is granted whole seconds, one more than
// needed: a waiter keeps its place alive when it tries again, which the
// jitter may put up to a second after the holder's lease was shown to end.
int64_t grant_seconds(int64_t length_ms);
// A waiter is shown the holder's lease ending this long before its own
// place's lease could, so that it tries again (and keeps it alive) in time.
constexpr int64_t k_keep_alive_margin_ms = 1300;

// A waiter with slots (slots.cpp): the watch `create` of the key whose
// going may give it a slot; false when it needs none (it may own one).
bool slot_watch(Client& client, const std::string& prefix, const std::string& mutex,
                const Kv& mine, nlohmann::json& create, int64_t deadline);

} // namespace simba::backend::etcd
