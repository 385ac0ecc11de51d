#pragma once
// The SQL of status and history on PostgreSQL (issue 16), spliced into the
// statements of statements.cpp, which stay one statement per operation:
//
// * Who took a lease: the columns holder (backend/holder.hpp's string) and
//   holder_token (the token it was written with) of "<prefix>leases",
//   written by the acquisition itself; a waiter's, the column holder of
//   "<prefix>waiters", written when it joins the queue.
// * The history: the table "<prefix>history", one row per event, written
//   by the statement of its event (CTEs: the event rows from the lease
//   write's RETURNING, an INSERT, and the trim to SIMBA_HISTORY_LIMIT of
//   the mutex). Each mutex counts its events in its lease row
//   (history_seq, raised by the write that makes them): the lease row's
//   lock orders them, and the trim is a range of the primary key.
//
// The tokens {L}, {Z}, {H} name the tables (statements.cpp fills them).
#include <cstdint>
#include <string>

namespace simba::backend::pg {

// The columns and the table, for the schema (CREATE ... IF NOT EXISTS and
// ALTER TABLE ... ADD COLUMN IF NOT EXISTS: tables made by an older simba
// gain them).
extern const char* const k_status_schema;

// `ev`: a CTE (after `up`, the lease write, whose RETURNING has hseq, the
// mutex's event count after it) of rows (seq, event, at, owner, holder,
// token, exit_code, held_ms, waited_ms, reason, by_owner). The CTEs that write them to the
// history and trim it to `limit` events of the mutex; when `limit` is 0 (no
// history), `ev` alone, never read: the statement keeps its parameters. `mutex`: the SQL of the row's name the events are
// written under ($1, or a slot's row: slots_sql.hpp). Starts with ",\n".
std::string history_writes(const std::string& ev, int64_t limit, const std::string& mutex = "$1");

// The event CTEs: an acquisition (`holder`: its parameter, e.g. "$6") from
// the row `old` (locked before the write) to `up`; a release (`exit_code`:
// its parameter); a forced release (`holder`: who forced it).
std::string acquired_events(const std::string& holder);
std::string released_events(const std::string& exit_code);
std::string forced_events(const std::string& holder, const std::string& by_owner);

// The lease row before the write, locked (FOR UPDATE: the newest version,
// which the write then changes; the statement's snapshot may be older).
// Starts with ",\n".
extern const char* const k_old_row;

// The counters (backend.hpp: MutexLease), columns acquisitions, losses and
// lost_token of the lease row: the loss a new lease adds for the lease `l`
// it replaces (0 or 1, an SQL expression).
extern const char* const k_expiry_loss;

// record_lost (backend.hpp): `up`, the row's bookkeeping (starts with
// ",\n"), and `ev`, its lost event (for history_writes).
extern const char* const k_record_lost;
extern const char* const k_lost_events;
// record_skipped (backend.hpp): `up`, the row's event count only, and its
// "skipped" event.
extern const char* const k_record_skipped;
extern const char* const k_skipped_events;

// inspect: $1 quarantine, $2 mutex ("" all; a mutex with slots, its slots'
// rows too: core/slots.hpp). Rows of now, till, kind (0 a
// lease, 1 a live waiter, in queue order), mutex, owner or contender,
// acquired_at or queued (ms), ttl_at, transition_at, token, holding,
// holder (a lease's only when written with its token), a lease's counters
// acquisitions and losses (a waiter's NULL).
std::string inspect_sql(const std::string& with_now_and_quarantine);

// history: $1 mutex ("" all; its slots' rows "m#k" too), $2 since (epoch
// ms): now, then the events (lost's reason and by_owner last).
extern const char* const k_history_read;

// place: $1 mutex, $2 contender: the live waiters in queue order, each
// whether it is the contender.
extern const char* const k_place;

} // namespace simba::backend::pg
