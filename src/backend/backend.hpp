#pragma once
// The one interface every backend implements (DESIGN §5). The contend logic
// never knows which backend it talks to.
//
// Every operation is bounded by `timeout_ms` and returns a Reply: the lease as
// it stands after the call and the backend's clock at that moment. Failures
// that can happen in normal use (busy, timeout, connection lost) are values,
// never exceptions; exceptions (UsageError, UnavailableError) are thrown only
// by open_backend() (open_backend.hpp; and by the first call of a Redis backend whose server
// checks went with that call: redis/redis.hpp).
#include "backend/diagnosis.hpp"
#include "core/lease.hpp"
#include "core/once_per.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace simba::backend {

struct Reply {
  enum class Status {
    ok,            // `observed` is valid
    failed,        // the request was not applied (e.g. could not be sent, busy)
    indeterminate, // sent, but no answer in time: it may have been applied
    // The server refused it for want of a permission (Redis: NOPERM, or a
    // command inside a script outside the ACL user's; PostgreSQL: SQLSTATE
    // 42501). Nothing was applied, and trying again will not help: the
    // contender ends (README and docs/backends/redis.md "ACL users").
    refused,
  };
  Status status = Status::failed;
  core::Observed observed; // lease and backend now, when ok
  bool changed = false;    // ok and the call changed the lease (acquired, renewed, released)
  std::string error;       // when not ok: one line for the log; when ok, an optional
                           // remark on the lease (e.g. why it is gone)
  // acquire_once, release_once, done_record: the mutex's done record as it
  // stands after the call (core/once_per.hpp); nullopt when it has none.
  std::optional<core::DoneRecord> done;
  // guard_mark: the start of the mutex's last scheduled run before the call
  // (backend clock); nullopt when none is recorded.
  std::optional<int64_t> last_run_at;
  // acquire_slot: the mutex is held with another number of slots, this one
  // (1: by a plain contender); nothing was changed. 0: no such conflict.
  int slots_recorded = 0;

  bool ok() const { return status == Status::ok; }
  static Reply failure(Status s, std::string e) {
    Reply r;
    r.status = s;
    r.error = std::move(e);
    return r;
  }
};

// Who took a lease (status): stored with it by the acquisition itself, in
// the same transaction or script (holder.hpp: its encoding). The label is
// the owner id's (core::label_of).
struct Holder {
  std::string via;     // the subcommand that took it: run, lead, schedule, acquire
  long pid = 0;        // of the simba process that took it
  std::string host;    // gethostname() of that process
  std::string command; // CMD's argv[0] only (arguments can hold secrets); "" for acquire
  // A waiter's --timeout end (epoch ms, this host's clock); 0: it waits on.
  // Not part of the holder's string (holder.hpp): stored with the place in
  // the queue (Waiter::gives_up_at), where the backend can keep it.
  int64_t gives_up_at = 0;
};

// A contender in a mutex's queue of waiters (status).
struct Waiter {
  std::string owner_id;
  int64_t since = 0;            // when it joined the queue: epoch ms
  std::optional<Holder> holder; // who it is, when it said so
  // When it gives up (its --timeout's end: epoch ms, by its own host's
  // clock); nullopt when it waits on, or its backend or simba keeps none.
  std::optional<int64_t> gives_up_at;
};

// One slot of a mutex with --slots N (core/slots.hpp): its lease and who
// holds it.
struct SlotLease {
  core::Lease lease; // Lease::slot: which
  std::optional<Holder> holder;
};

struct MutexLease {
  std::string mutex;
  core::Lease lease; // with slots: the marker (owner core::slot_marker(N))
  // The holder of this very lease (its fencing token); nullopt when none is
  // known: a free mutex, a lease taken by an older simba, a backend that
  // keeps none (Listing::holders_kept).
  std::optional<Holder> holder;
  std::vector<Waiter> waiters;  // in queue order (Listing::waiters_kept)
  std::vector<SlotLease> slots; // inspect(), a mutex with slots: each one, by number
  // inspect(): the mutex's counters, kept by the backend beside its lease
  // (SQLite and PostgreSQL: columns of its lease row, its slots' rows
  // summed; Redis: the hash <hash>:counts, which no script deletes), each
  // raised by the write that makes its event, never lowered. acquisitions:
  // new leases (acquired, handed_over). losses: leases that ended other
  // than by their owner's release, each counted once, by the first of:
  // its forced; its holder's lost, while the row still shows the lease as
  // the holder's (valid or run out) or has no trace of it (the backend lost
  // it); its expired (not of a lease only held: --min-hold, simba
  // acquire's). docs/commands.md "simba history". nullopt: not kept.
  std::optional<int64_t> acquisitions;
  std::optional<int64_t> losses;
};

struct Listing {
  bool ok = false;
  std::string error;
  int64_t now = 0;
  std::vector<MutexLease> mutexes; // sorted by name
  bool holders_kept = false;       // the backend stores holders (inspect())
  bool waiters_kept = false;       // and lists its queues of waiters
};

// One event of a mutex's history (Backend::history). Written by the
// operation that makes it, in its transaction or script; "expired" by the
// acquisition that finds the lease run out (nobody is there when it does).
// "lost" is written by the owner that lost the lease, once its CMD is
// stopped (record_lost).
struct HistoryEvent {
  std::string mutex;
  int64_t at = 0;               // epoch ms, the backend's clock
  std::string event;            // acquired, released, forced, expired, handed_over, lost, skipped
  std::string owner_id;         // whose lease
  std::optional<Holder> holder; // who that was; forced: who forced it
  uint64_t token = 0;
  std::optional<int> exit_code;     // released: CMD's, where known; lost: CMD's status
  std::optional<int64_t> held_ms;   // released, forced, expired, lost
  std::optional<int64_t> waited_ms; // acquired, handed_over: in the queue
  std::string reason;               // lost: core::loss_reason_name (revoked, taken, ...);
                                    // skipped: already-ran, busy, timeout
  std::string by;                   // lost, taken: the owner id that held the mutex then;
                                    // skipped: the holder's owner id, or (already-ran) the
                                    // runner's label
};

// What a contender that did not run tells the history
// (Backend::record_skipped): a "skipped" event of its own owner id and
// holder (set_holder), with `reason` and `by` (HistoryEvent), `token` the
// holder's lease or the run's, `held_ms` how long before now the holder
// took its lease or the run started, `waited_ms` how long it waited
// (timeout), `exit_code` the run's, when it finished (already-ran).
struct SkippedRun {
  std::string reason;
  std::string by;
  uint64_t token = 0;
  std::optional<int64_t> held_ms;
  int64_t waited_ms = 0;
  std::optional<int> exit_code;
};

// What the owner that lost a lease tells the history (Backend::record_lost).
struct LostLease {
  uint64_t token = 0;           // the lost lease's fencing token
  std::string reason;           // core::loss_reason_name
  std::string by;               // taken: the owner id shown holding the mutex
  std::optional<int> exit_code; // CMD's status after the stop; none: no CMD ran
  int64_t held_ms = 0;          // from its acquisition to the loss
};

struct History {
  bool ok = false;
  bool kept = false; // false: the backend keeps no history
  std::string error;
  int64_t now = 0;
  std::vector<HistoryEvent> events; // oldest first
};

// Whether a reply shows the mutex held by someone else than `contender`
// at the backend's time: an owner, and not yet free.
inline bool held_by_other(const Reply& r, const std::string& contender) {
  const core::Lease& l = r.observed.lease;
  return r.ok() && !l.owner_id.empty() && l.owner_id != contender && !l.free_at(r.observed.now);
}

class Wakeups;

// A release handed the mutex over to a waiter (Wakeups::wake()): the
// reply the waiter's own acquire would have got, and a local time no later
// than that reply's backend `now` (CLOCK_BOOTTIME milliseconds, the
// driver's clock), from which the waiter counts the lease.
struct Grant {
  Reply reply;
  int64_t sent_at_ms = 0;
};

class Backend {
public:
  virtual ~Backend() = default;

  // The acquisition rule of DESIGN §2: `contender` gets (or renews) the lease
  // if no valid lease exists, or if it is the current owner and
  // transition_at > now. A new acquisition takes a new fencing token; a
  // renewal keeps acquired_at and the token. Otherwise the lease is returned
  // unchanged. ttl_at = now + ttl, transition_at = ttl_at + transition.
  virtual Reply acquire(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                        int64_t transition_ms, int64_t timeout_ms) = 0;

  // Renew only: like acquire for the current owner, but never creates a
  // lease. Unchanged lease unless `contender` is the valid owner and the
  // lease has fencing token `token` (a compare-and-set on both: DESIGN §9).
  virtual Reply guard(const std::string& mutex, const std::string& contender, uint64_t token,
                      int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) = 0;

  // A guard for --min-hold, once CMD and all it started are gone: the lease
  // is kept until now + hold_ms (no transition) and marked as only held
  // (Lease::holding; every other write clears the mark), so that a forced
  // release frees it at once instead of revoking it.
  virtual Reply hold(const std::string& mutex, const std::string& contender, uint64_t token,
                     int64_t hold_ms, int64_t timeout_ms) = 0;

  // A step's first guard (run --lease): the guard of guard(), only of a
  // lease marked as only held (Lease::holding: no step runs under it),
  // whose mark it clears in the same atomic step. A lease that is not
  // marked (a step of the job runs under it) is left unchanged: `changed`
  // false. Two steps of one lease thus never run at once, and a lease is
  // only ever freed at once (release --lease, --force) while none runs.
  virtual Reply begin_step(const std::string& mutex, const std::string& contender, uint64_t token,
                           int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) = 0;

  // simba renew: a guard or a hold as the lease's mark asks, decided in the
  // same atomic step as the write (a read, then a write, would let a step
  // start between them and be marked as only held while its CMD runs). The
  // compare-and-set of guard; Lease::holding stays as it is. A lease only
  // held is kept until now + ttl_ms + transition_ms (as hold does); a
  // guarded one is renewed as guard does, but its ttl_at and transition_at
  // never move earlier (the guarding step's CMD counts on them).
  virtual Reply extend(const std::string& mutex, const std::string& contender, uint64_t token,
                       int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) = 0;

  // Ends the lease at once if `contender` owns it (valid) and it has fencing
  // token `token`; `changed` says whether it did. Wakes the waiters
  // (notify). `token` 0: whatever lease `contender` owns (a contender whose
  // acquire got no answer does not know the token; its id is its own).
  virtual Reply release(const std::string& mutex, const std::string& contender, uint64_t token,
                        int64_t timeout_ms) = 0;

  // Admin break-lock: ends any valid lease, or with `token` not 0 only the
  // lease with that fencing token. Wakes waiters and the owner. A lease
  // that CMD still runs under is revoked (no owner, free at its
  // transition_at: core/lease.hpp); one only held (Lease::holding) is freed
  // at once, like a release.
  virtual Reply force_release(const std::string& mutex, uint64_t token, int64_t timeout_ms) = 0;

  // simba release --lease: the owner ends its own lease, named by its
  // token. Decides as force_release does (a step's CMD may still run under
  // it: revoked), but a lease only held ends as a release: event
  // `released`, no loss counted (the owner said so; nothing was lost).
  virtual Reply release_lease(const std::string& mutex, uint64_t token, int64_t timeout_ms) = 0;

  virtual Reply get(const std::string& mutex, int64_t timeout_ms) = 0;

  // The lease with fencing token `token` (not 0), revoked by
  // force_release (no owner; transition_at kept so that its CMD stops
  // first), ends now, and the mutex goes to the first live waiter as after
  // a release; anything else (a valid lease, another token, a quarantine,
  // a slot's row) is left unchanged. No history event: the revocation
  // wrote `forced`, the owner `lost`. Only the simba that ran CMD under
  // that lease calls it, once it has seen CMD and all CMD started gone;
  // never a step of a lease (run --lease), whose token others share
  // (core: Contender, LossSeen). The default: a failure, no I/O; the
  // revoked lease runs out at its transition_at.
  virtual Reply end_revoked(const std::string& mutex, const std::string& contender,
                            uint64_t token, int64_t timeout_ms);


  // --slots N, N > 1 (core/slots.hpp: the slot rows and the marker). Like
  // acquire, in one step: a renewal of the slot `contender` holds, else a
  // new lease on a free slot (Lease::slot says which) with a token above
  // every slot's, and the marker moved to cover it; else the lease of the
  // slot that frees first, unchanged. A marker of another N (or a plain
  // holder) refuses: Reply::slots_recorded. guard, hold, extend, release
  // and force_release address a slot by its row (core::slot_row) and keep
  // the marker in the same step. The default (has_slots() false) refuses.
  virtual bool has_slots() const { return false; }
  virtual Reply acquire_slot(const std::string& mutex, const std::string& contender, int slots,
                             int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms);

  // --once-per (core/once_per.hpp; docs/recipes.md, cron). Like acquire,
  // but a new lease is taken only if the window that holds the backend's
  // now may run (core::judge_window, core::may_run); taking it writes the
  // done record of the run (unfinished: `label`, `host`, the token) in the
  // same step. The reply carries the record as it stands. For backends
  // without done records: a failure that says so.
  virtual Reply acquire_once(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                             int64_t transition_ms, const core::OncePer& once,
                             const std::string& label, const std::string& host, int64_t timeout_ms);

  // release, and in the same step the run's done record (the one with the
  // lease's token) gets `exit_code` and the time. The record is kept until
  // the next run's acquire_once replaces it (so for at least two windows);
  // it never blocks the next window.
  virtual Reply release_once(const std::string& mutex, const std::string& contender, uint64_t token,
                             int exit_code, int64_t timeout_ms);

  // schedule: a guard (its rule exactly) that, in the same step, reads the
  // start of the mutex's last run into Reply::last_run_at and, with
  // `record` and only if the guard renewed, sets it to the backend's now
  // (a run starts). The default: a plain guard, nothing recorded.
  virtual Reply guard_mark(const std::string& mutex, const std::string& contender, uint64_t token,
                           int64_t ttl_ms, int64_t transition_ms, bool record, int64_t timeout_ms);

  // Reads the lease and the done record (status).
  virtual Reply done_record(const std::string& mutex, int64_t timeout_ms);

  // status: the mutexes with their holders (MutexLease::holder), waiters
  // and counters, all of them (`mutex` empty: every mutex ever leased, by
  // name) or one. Read-only.
  virtual Listing inspect(const std::string& mutex, int64_t timeout_ms) = 0;

  // Who this process is, written with every lease its acquisitions take
  // from now on (acquire, acquire_once, and a hand-over to its place in a
  // queue); set once, before the first of them. No I/O. The default: not
  // kept by this backend.
  virtual void set_holder(const Holder&) {}

  // simba history: the events of `mutex` (empty: every mutex) at or after
  // `since_ms` (epoch ms), oldest first. Read-only. Each backend keeps the
  // last history_limit() (backend/history.hpp) events per mutex. The
  // default: none kept.
  virtual History history(const std::string& mutex, int64_t since_ms, int64_t timeout_ms);

  // CMD's exit code, for the history event of the release that follows.
  // No I/O. The default: not kept.
  virtual void set_exit_code(int) {}

  // The owner `contender` lost the lease with `lost.token` on `mutex` and
  // has stopped its CMD: one "lost" event (HistoryEvent) with the holder of
  // set_holder(), in one transaction, script or statement, trimmed like
  // every event; the mutex's losses counter (MutexLease::losses) goes up
  // unless a forced or an expired counted that lease already, and when the
  // row still shows that lease it notes the token, so that neither counts
  // it later (SQLite and PostgreSQL: no row, nothing written). It writes history only:
  // whatever lease stands (ours, another's, none) is left exactly as it is
  // -- never renewed, ended or created. With SIMBA_HISTORY_LIMIT=0 only
  // the counter. The reply: the lease as it stands, `changed` false. The
  // default (no history kept): a failure that says so.
  virtual Reply record_lost(const std::string& mutex, const std::string& contender,
                            const LostLease& lost, int64_t timeout_ms);

  // A contender that did not run (--once-per's window ran already, busy
  // with --no-wait, --timeout passed): one "skipped" event (SkippedRun)
  // in the mutex's history, trimmed like every event. History only, like
  // record_lost: no lease, counter or done record changes; a mutex the
  // backend has no row of gets nothing. Best effort: the caller only logs
  // a failure. The default (no history kept): a failure that says so.
  virtual Reply record_skipped(const std::string& mutex, const std::string& contender,
                               const SkippedRun& skipped, int64_t timeout_ms);

  // The wake-ups and hand-overs of `contender` on `mutex` (wakeups.hpp: their
  // lifecycle), valid while the backend lives; no_wakeups() for a backend
  // without notifications (the default). One contender on one mutex at a
  // time: asking for another leaves the former's queue at the next call.
  // Does no I/O.
  virtual Wakeups& wakeups(const std::string& mutex, const std::string& contender);

  // simba doctor: the checks only this backend can make (its server's
  // settings, rights, TLS, tables), appended to `found`. Never throws for
  // what it finds; a check that cannot be made is a finding too. The
  // default: none.
  virtual void diagnose(Diagnosis& found, const DiagnoseOptions& options);

  // The longest one call may take (the URI's `timeout`; 2 s where the
  // backend has none). The contender's calls get this budget, less where
  // the lease leaves less (the kill point bounds an owner's calls).
  virtual int64_t call_timeout_ms() const { return k_default_call_timeout_ms; }
  static constexpr int64_t k_default_call_timeout_ms = 2000;

  // Identity of the backend for messages and re-entry detection: the URI with
  // any password removed (e.g. "sqlite:///home/u/.local/state/simba/simba.db").
  virtual std::string describe() const = 0;

  // simba exits next: what only this process holds (a connection, its
  // descriptors and memory) may be left for the kernel to end at exit,
  // when that is quicker than closing it (docs/benchmarks.md). What others
  // see, a place in a queue above all, is still undone by the destructor.
  // No operation may follow.
  virtual void leave() {}
};

// What opening a backend may do. `use` (run, lead, schedule): a missing
// SQLite database is created, and so is the default location's directory
// (never the directory of a path the user gave: a typo must not make a lock
// namespace of its own). `inspect` (status, release): nothing is created; a
// missing database is an error, and one that may only be read is opened
// read-only.
enum class Access { use, inspect };

} // namespace simba::backend
