#pragma once
// The SQL of the PostgreSQL backend: the schema, and one statement per
// operation. Each statement is one round trip and one transaction (no
// session state, no named prepared statement: it works through PgBouncer
// in transaction mode), reads the server's clock once (clock_timestamp():
// now() stands still for the transaction) and answers one row:
//
//   now_ms, changed, owner, acquired_at, ttl_at, transition_at, token,
//   holding, quarantine_till
//
// the lease after the call (k_lease_columns), with the end of the
// quarantine in force (0: none; statements.cpp, "The server run").
#include <string>

namespace simba::backend::pg {

struct Statements {
  std::string create_schema; // run before `schema` when the schema is missing
  std::string schema;        // run when the tables are missing (CREATE ... IF NOT EXISTS)
  // Fails when the tables of a simba without status are missing (status
  // brings tables up to date but creates none).
  std::string probe_leases;
  // Fails unless every table and column of `schema` is there (committed).
  std::string probe_schema;
  std::string acquire, guard, guard_mark, release, force_release, get;
  // The lease revoked from its owner ends at once (backend.hpp: end_revoked).
  std::string end_revoked;
  // The lost event of an owner (status_sql.hpp: k_record_lost).
  std::string record_lost;
  // The skipped event of a contender that did not run (k_record_skipped).
  std::string record_skipped;
  // --once-per: as acquire, release and get, with the done record after
  // the answer's nine columns (core::DoneRecord's eight; once_window NULL:
  // none).
  std::string acquire_once, release_once, done_record;
  // The waiters' queue (wakeups.hpp), on the waiter's LISTEN connection.
  std::string enqueue, dequeue;
  // status and history (status_sql.hpp): inspect, history, and a waiter's
  // place in its queue (on the main connection).
  std::string inspect, history, place;
  // --slots N > 1 (slots_sql.hpp): the acquisition, and guard (hold,
  // extend), release and force_release of a slot's row; their answer has
  // three columns more (slot, slots_recorded, retry).
  std::string acquire_slot, guard_slot, release_slot, force_release_slot;
};

// The statements on the tables "<prefix>leases", "<prefix>server",
// "<prefix>waiters" and "<prefix>history" of `schema` (quoted identifiers);
// the history trimmed to history_limit() events per mutex.
Statements make_statements(const std::string& schema, const std::string& prefix);

// --once-per: the start of the window that holds `now`, an SQL expression
// of bigint expressions -- core::window_start (core/once_per.cpp) and
// window_start in redis/lua/common_once.lua, mirrored: keep the three
// alike (tests/backend/conformance_window.cpp runs one table of boundary
// cases against each).
std::string window_start_sql(const std::string& now, const std::string& period,
                             const std::string& offset);

// `identifier` as a quoted SQL identifier ("a""b" for a"b): the one way
// every schema, table and channel name gets into the SQL.
std::string quote_identifier(const std::string& identifier);

// The part of the schema that needs privileges, for the message that asks
// an administrator to run it.
std::string schema_sql(const std::string& schema, const std::string& prefix);

} // namespace simba::backend::pg
