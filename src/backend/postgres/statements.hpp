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

// Each statement is built on its first use (a run uses two or three of
// them: building all took ~1.4 M instructions, half of a run's own).
class Statements {
public:
  // The statements on the tables "<prefix>leases", "<prefix>server",
  // "<prefix>waiters" and "<prefix>history" of `schema` (quoted
  // identifiers); the history trimmed to history_limit() events per mutex.
  Statements(const std::string& schema, const std::string& prefix);

  // run before schema() when the schema is missing
  const std::string& create_schema() const { return sql(Id::create_schema); }
  // run when the tables are missing (CREATE ... IF NOT EXISTS)
  const std::string& schema() const { return sql(Id::schema); }
  // Fails when the tables of a simba without status are missing (status
  // brings tables up to date but creates none).
  const std::string& probe_leases() const { return sql(Id::probe_leases); }
  // Fails unless every table and column of schema() is there (committed).
  const std::string& probe_schema() const { return sql(Id::probe_schema); }
  const std::string& acquire() const { return sql(Id::acquire); }
  const std::string& guard() const { return sql(Id::guard); }
  const std::string& guard_mark() const { return sql(Id::guard_mark); }
  const std::string& release() const { return sql(Id::release); }
  const std::string& force_release() const { return sql(Id::force_release); }
  const std::string& get() const { return sql(Id::get); }
  // The lease revoked from its owner ends at once (backend.hpp: end_revoked).
  const std::string& end_revoked() const { return sql(Id::end_revoked); }
  // The lost event of an owner (status_sql.hpp: k_record_lost).
  const std::string& record_lost() const { return sql(Id::record_lost); }
  // The skipped event of a contender that did not run (k_record_skipped).
  const std::string& record_skipped() const { return sql(Id::record_skipped); }
  // --once-per: as acquire, release and get, with the done record after
  // the answer's nine columns (core::DoneRecord's eight; once_window NULL:
  // none).
  const std::string& acquire_once() const { return sql(Id::acquire_once); }
  const std::string& release_once() const { return sql(Id::release_once); }
  const std::string& done_record() const { return sql(Id::done_record); }
  // The waiters' queue (wakeups.hpp), on the waiter's LISTEN connection.
  const std::string& enqueue() const { return sql(Id::enqueue); }
  const std::string& dequeue() const { return sql(Id::dequeue); }
  // status and history (status_sql.hpp): inspect, history, and a waiter's
  // place in its queue (on the main connection).
  const std::string& inspect() const { return sql(Id::inspect); }
  const std::string& history() const { return sql(Id::history); }
  const std::string& place() const { return sql(Id::place); }
  // --slots N > 1 (slots_sql.hpp): the acquisition, and guard (hold,
  // extend), release and force_release of a slot's row; their answer has
  // three columns more (slot, slots_recorded, retry).
  const std::string& acquire_slot() const { return sql(Id::acquire_slot); }
  const std::string& guard_slot() const { return sql(Id::guard_slot); }
  const std::string& release_slot() const { return sql(Id::release_slot); }
  const std::string& force_release_slot() const { return sql(Id::force_release_slot); }

private:
  enum class Id {
    create_schema,
    schema,
    probe_leases,
    probe_schema,
    acquire,
    guard,
    guard_mark,
    release,
    force_release,
    get,
    end_revoked,
    record_lost,
    record_skipped,
    acquire_once,
    release_once,
    done_record,
    enqueue,
    dequeue,
    inspect,
    history,
    place,
    acquire_slot,
    guard_slot,
    release_slot,
    force_release_slot,
    count
  };
  const std::string& sql(Id id) const;
  std::string make(Id id) const;
  std::string make_lease_sql(Id id) const;
  std::string fill(const std::string& sql) const;

  std::string m_schema, m_prefix;
  std::string m_leases, m_server, m_waiters, m_history; // the tables' quoted names
  mutable std::string m_made[static_cast<int>(Id::count)];
  mutable bool m_built[static_cast<int>(Id::count)] = {};
};

inline Statements make_statements(const std::string& schema, const std::string& prefix) {
  return Statements(schema, prefix);
}

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
