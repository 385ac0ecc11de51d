#pragma once
// The SQL of the MySQL backend: the schema, and one query per operation.
// Each query is one round trip: several statements sent at once
// (CLIENT_MULTI_STATEMENTS), a transaction of its own, that set everything
// they read from the session themselves (no session state kept between
// queries). Strings go in as hex literals (packets.hpp: hex_literal), so no
// sql_mode or character set changes what a statement means.
//
// The lease row is the statements' scratch space too: the first write
// locks it and notes the server's clock once (now_us, from SYSDATE(6):
// NOW() would be the statement's start) and the lease as it was (was_*);
// the statements after it read both from the row, so every statement of
// the query sees one clock and one "before" (statements.cpp).
//
// Every write query answers one row (Query::answer says which result):
//
//   now_ms, changed, owner, acquired_at, ttl_at, transition_at, token, holding,
//   [extra columns,] quarantine_till
//
// (extra: guard_mark's last run's start before the call, --once-per's done
// record, a slot's number and refusal); quarantine_till is the end of the
// quarantine in force (0: none; statements.cpp, quarantine_sql).
#include "core/once_per.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace simba::backend::mysql {

struct Query {
  std::string sql;
  size_t answer = 0; // the index of the statement whose rows answer
  // A release's: the index of the result that names another session
  // holding the hint lock (leaving_hint, statements.cpp); 0 none.
  size_t hint_holder = 0;
};

// One mutex's operation, its values already SQL literals.
struct Call {
  std::string mutex, contender; // hex literals
  std::string holder;           // hex literal or NULL
  int64_t ttl_ms = 0, transition_ms = 0;
  uint64_t token = 0;
  bool quarantine = true; // the URI's (statements.cpp: quarantine_sql)
  std::string hint;        // the hint lock's name, a literal (wakeups.hpp); "" none
  std::string queue;       // the mutex of the waiters' queue (a slot's row: its mutex's)
};

class Statements {
public:
  explicit Statements(const std::string& prefix);

  // CREATE TABLE ... IF NOT EXISTS, the administrator's SQL too.
  const std::string& schema() const { return m_schema; }
  std::string probe() const; // fails unless every table is there
  // The columns and index the waiters' table got after its first
  // release (2026-12-06), added to a table made before (MariaDB's IF NOT
  // EXISTS).
  std::string upgrade() const;
  // The tables, for messages.
  std::string leases() const { return m_leases; }
  std::string history_table() const { return m_history; }

  Query acquire(const Call& c) const;
  // mode: "guard", "hold" (--min-hold), "step" (begin_step), "keep" (extend).
  Query guard(const Call& c, const std::string& mode) const;
  // guard's, and the start of the last run (record: this one's now).
  Query guard_mark(const Call& c, bool record) const;
  Query release(const Call& c, const std::string& exit_code) const;
  Query force_release(const Call& c, bool by_owner) const;
  Query end_revoked(const Call& c) const;
  Query get(const std::string& mutex) const;
  // --once-per (core/once_per.hpp): acquire's rule, but a new lease only
  // when the contender's window may run, its done record written in the
  // same query; the answer has the record's 10 columns after the lease's 8
  // (once_window NULL: none).
  Query acquire_once(const Call& c, const core::OncePer& once, const std::string& label,
                     const std::string& host) const;
  Query release_once(const Call& c, int exit_code) const;
  Query done_record(const std::string& mutex) const;
  // --slots N > 1 (slots_sql.cpp): `mutex` as given (c.mutex its
  // literal); the answer has two columns more: the slot, and the N of a
  // marker that refused (0: none).
  Query acquire_slot(const Call& c, const std::string& mutex, int slots) const;
  // A plain write query (guard, release, force_release...) of a slot's
  // row `row` ("m#k"), its marker kept in the same transaction.
  Query on_slot_row(Query q, const std::string& row) const;
  Query record_lost(const Call& c, const std::string& exit_code, int64_t held_ms,
                    const std::string& reason, const std::string& by) const;
  Query record_skipped(const Call& c, const std::string& exit_code, const std::string& held_ms,
                       const std::string& reason, const std::string& by,
                       int64_t waited_ms) const;
  // The waiters' queue (wakeups.hpp): joining it (literals; holder NULL
  // or a literal; gives_up_at epoch ms, 0 never), leaving it.
  std::string enqueue(const std::string& mutex, const std::string& contender,
                      const std::string& holder, int64_t gives_up_at) const;
  std::string dequeue(const std::string& mutex, const std::string& contender) const;
  // The live waiters of `mutex` (a literal) in queue order: one column,
  // 1 for `contender`'s row (a literal), 0 for the others'.
  std::string queue(const std::string& mutex, const std::string& contender) const;
  // The clock (answer - 1), the leases (answer): mutex, owner,
  // acquired_at, ttl_at, transition_at, token, holding, holder, acquisitions,
  // losses; and the live waiters (answer + 1): mutex, contender,
  // queued_at (ms), holder, gives_up_at (0 never), in queue order. `mutex` "" all.
  Query inspect(const std::string& mutex) const;
  // The clock (answer - 1) and the events: mutex, at, event, owner, holder,
  // token, exit_code, held_ms, waited_ms, reason, by_owner.
  Query history(const std::string& mutex, int64_t since_ms) const;

private:
  std::string touch(const std::string& mutex, bool insert) const;
  std::string quarantine_sql(const std::string& mutex, int64_t lease_ms) const;
  Query wrap(const std::string& mutex, const std::string& body, int statements,
             const std::string& events, const std::string& extra = "") const;
  std::string history_sql(const std::string& mutex, const std::vector<std::string>& events,
                          const std::string& guard) const;
  std::string answer_sql(const std::string& mutex, const std::string& extra, bool looked) const;
  std::string look(const Call& c) const;
  std::string run_check(const Call& c) const;
  std::string event(const std::string& mutex, const std::string& values) const;
  std::vector<std::string> acquired_event_list(const Call& c, const std::string& guard) const;
  std::string acquired_events(const Call& c) const;
  std::string looked_touch(const Call& c) const;
  std::string waited(const Call& c) const;
  std::string gated(const Call& c, const std::string& now) const;
  Query creating(const std::string& mutex, Query q) const;
  static Query taking_hint(const Call& c, const std::string& leases, Query q,
                           const std::string& guard = "");
  Query leaving_hint(const Call& c, Query q) const;

  std::string m_leases, m_server, m_run, m_waiters, m_history, m_schema;
};

// --once-per: the start of the window that holds `now` (SQL expressions
// of integers) -- core::window_start, mirrored (keep them alike;
// tests/backend/conformance_window.cpp runs one table of boundary cases
// against each backend's).
std::string window_start_sql(const std::string& now, const std::string& period,
                             const std::string& offset);

// The server's clock in microseconds and milliseconds (SQL expressions).
extern const char* const k_now_us;
extern const char* const k_now_ms;

} // namespace simba::backend::mysql
