// The SQL of the MySQL backend (statements.hpp). Over 500 lines: the
// statements share their fragments (the touch, the history, the answer,
// the quarantine) and are kept side by side so that they stay alike, as in
// postgres/statements.cpp; --slots have theirs in slots_sql.cpp.
//
// Tables: "<prefix>leases", one row per mutex, never deleted (the row
// keeps the last fencing token when the lease ends: owner '' and
// transition_at at the end), and "<prefix>history", one row per event.
// The rules are those of the PostgreSQL backend (postgres/statements.cpp;
// keep them alike): DESIGN §2's owner-or-expired acquisition, owner and
// token compared together in every compare-and-set, tokens above the last
// one and never below the clock in microseconds.
//
// Atomicity: the query's first write (touch) takes the row's exclusive
// lock, which the transaction keeps to its COMMIT; every later statement
// of the query decides on the row as it then is, and nobody else writes
// it meanwhile. An acquire reads the row without a lock before (its look:
// Statements::look), and goes no further when the lease is another's. Each UPDATE's condition is its WHERE, read before any of
// its assignments; the assignments read only columns that no earlier
// assignment of the same statement wrote (was_*, now_us), so they mean the
// same whether the server assigns left to right (MySQL, MariaDB's default)
// or all at once (MariaDB's SIMULTANEOUS_ASSIGNMENT).
#include "backend/mysql/statements.hpp"

#include "backend/history.hpp"
#include "backend/mysql/packets.hpp"
#include "backend/mysql/sql_parts.hpp"
#include "core/fifo.hpp"

#include <vector>

namespace simba::backend::mysql {

const char* const k_now_us = "FLOOR(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000)";
const char* const k_now_ms = "FLOOR(UNIX_TIMESTAMP(SYSDATE(6)) * 1000)";

const char* const k_begin =
    "SET time_zone = '+00:00';SET TRANSACTION ISOLATION LEVEL READ COMMITTED;START TRANSACTION;";

std::string n() { return "(now_us DIV 1000)"; }
std::string num(int64_t v) { return std::to_string(v); }
std::string unum(uint64_t v) { return std::to_string(v); }

namespace {

std::string hex_or_empty(const std::string& s) { return wire::hex_literal(s); }

// Where statement `n` (0-based) of `sql` ends: its ';'. Strings in the
// queries are hex literals and never hold one.
size_t nth_statement_end(const std::string& sql, int n) {
  size_t at = 0;
  for (int i = 0; i <= n; ++i) at = sql.find(';', at) + 1;
  return at;
}

// The server run (quarantine_sql below): @@server_id and the id in the
// MEMORY table "<prefix>run", which a restart empties (a new run makes a
// new id).
std::string run_sql(const std::string& run) {
  return "CONCAT(@@server_id, '/', (SELECT id FROM " + run + " WHERE one = 1))";
}
std::string new_run_sql(const std::string& run) {
  return "INSERT INTO " + run + " SELECT 1, UUID() FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM " +
         run + " WHERE one = 1)";
}

// The tables, the leases' last: the marker of the current run (the row of
// "<prefix>server", quarantine_sql below) is written before the leases'
// table exists, so nobody's query can touch a lease row of tables just made
// before their marker is there. (Made first, another first use's acquire
// ran between the two, found no marker and quarantined both: 13 s for two
// --slots holders racing on new tables, e2e-mysql/test_slots_fifo.) A
// leases' table that was already there gets a marker only while empty,
// read by a plain SELECT: an INSERT ... SELECT of it locked the rows it
// read, while holding "<prefix>run" (a MEMORY table, locked whole), and
// an acquire that held a lease row and waited for "<prefix>run" made a
// cycle that InnoDB does not see (8 first uses at once hung to their
// timeout).
std::string schema_sql(const std::string& leases, const std::string& server,
                       const std::string& run, const std::string& waiters,
                       const std::string& history) {
  const std::string leases_name = wire::hex_literal(leases.substr(1, leases.size() - 2));
  const std::string marker = "INSERT IGNORE INTO " + server + " SELECT 1, " + run_sql(run) +
                             ", 0, 0 FROM DUAL WHERE ";
  return "CREATE TABLE IF NOT EXISTS " + server + R"( (
  id TINYINT NOT NULL PRIMARY KEY, run VARBINARY(100) NOT NULL, until_ms BIGINT NOT NULL,
  longest BIGINT NOT NULL) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS )" + run + R"( (
  one TINYINT NOT NULL PRIMARY KEY, id VARBINARY(64) NOT NULL) ENGINE=MEMORY;
CREATE TABLE IF NOT EXISTS )" + waiters + R"( (
  mutex VARBINARY(255) NOT NULL, contender VARBINARY(255) NOT NULL, queued_at BIGINT NOT NULL,
  conn_id BIGINT NOT NULL, holder BLOB NULL, woken_at BIGINT NOT NULL DEFAULT 0,
  gives_up_at BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (mutex, contender), KEY (conn_id)) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS )" +
         history + R"( (
  mutex VARBINARY(255) NOT NULL, seq BIGINT NOT NULL, at BIGINT NOT NULL,
  event VARBINARY(32) NOT NULL, owner VARBINARY(255) NOT NULL, holder BLOB NULL,
  token BIGINT NOT NULL, exit_code INT NULL, held_ms BIGINT NULL, waited_ms BIGINT NULL,
  reason VARBINARY(64) NULL, by_owner VARBINARY(255) NULL,
  PRIMARY KEY (mutex, seq)) ENGINE=InnoDB;
)" + new_run_sql(run) + R"(;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
)" + marker + "NOT EXISTS (SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() " +
         "AND TABLE_NAME = " + leases_name + ");\nCREATE TABLE IF NOT EXISTS " + leases + R"( (
  mutex VARBINARY(255) NOT NULL PRIMARY KEY, owner VARBINARY(255) NOT NULL DEFAULT '',
  acquired_at BIGINT NOT NULL DEFAULT 0, ttl_at BIGINT NOT NULL DEFAULT 0,
  transition_at BIGINT NOT NULL DEFAULT 0, token BIGINT NOT NULL DEFAULT 0,
  holding TINYINT NOT NULL DEFAULT 0, holder BLOB NULL, holder_token BIGINT NOT NULL DEFAULT 0,
  acquisitions BIGINT NOT NULL DEFAULT 0, losses BIGINT NOT NULL DEFAULT 0,
  lost_token BIGINT NULL, history_seq BIGINT NOT NULL DEFAULT 0, last_run_at BIGINT NULL,
  now_us BIGINT NOT NULL DEFAULT 0, wrote TINYINT NOT NULL DEFAULT 0,
  was_owner VARBINARY(255) NOT NULL DEFAULT '', was_acquired_at BIGINT NOT NULL DEFAULT 0,
  was_ttl_at BIGINT NOT NULL DEFAULT 0, was_transition_at BIGINT NOT NULL DEFAULT 0,
  was_token BIGINT NOT NULL DEFAULT 0, was_holding TINYINT NOT NULL DEFAULT 0,
  was_last_run_at BIGINT NULL, once_window BIGINT NULL, once_label VARBINARY(255) NULL,
  once_host VARBINARY(255) NULL, once_token BIGINT NULL, once_started_at BIGINT NULL,
  once_finished TINYINT NULL, once_exit_code INT NULL, once_finished_at BIGINT NULL,
  once_period BIGINT NULL, once_offset BIGINT NULL, once_case TINYINT NOT NULL DEFAULT 0,
  slot_act TINYINT NOT NULL DEFAULT 0, slot_pick INT NOT NULL DEFAULT -1,
  slot_token BIGINT NOT NULL DEFAULT 0, lease_ms BIGINT NOT NULL DEFAULT 0,
  q_till BIGINT NOT NULL DEFAULT 0, gate_till BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB;
)" + "SELECT EXISTS (SELECT 1 FROM " + leases + ") INTO @simba_used;" + marker + "@simba_used = 0";
}

} // namespace

Statements::Statements(const std::string& prefix)
    : m_leases("`" + prefix + "leases`"), m_server("`" + prefix + "server`"),
      m_run("`" + prefix + "run`"), m_waiters("`" + prefix + "waiters`"),
      m_history("`" + prefix + "history`"),
      m_schema(schema_sql(m_leases, m_server, m_run, m_waiters, m_history)) {}

// Fails unless every table is there.
std::string Statements::probe() const {
  return "SELECT 1 FROM " + m_leases + ", " + m_server + ", " + m_run + ", " + m_waiters + ", " +
         m_history + " LIMIT 0";
}

std::string Statements::upgrade() const {
  return "ALTER TABLE " + m_waiters +
         " ADD COLUMN IF NOT EXISTS woken_at BIGINT NOT NULL DEFAULT 0, ADD COLUMN IF NOT "
         "EXISTS gives_up_at BIGINT NOT NULL DEFAULT 0, ADD INDEX IF NOT EXISTS conn_id (conn_id)";
}

// The waiters' queue (wakeups.hpp), on the waiter's own connection: its
// row names that connection, so that status lists only the waiters whose
// session still runs; the rows of the dead are dropped by the next to
// queue. Each statement commits on its own.
//
// A waiter's connection is there while it holds its liveness lock, the
// named lock "simba:w:<its id>" it takes before its row is written (ids
// are not reused while the server runs, and a session's named locks go
// with it): IS_USED_LOCK tells, per row, at the cost of a function call.
// information_schema.PROCESSLIST, which this replaced, built a table of
// every connection of the server in each statement that named it, even
// with no waiter (0.4-0.9 ms of every acquire), and showed a user without
// PROCESS only its own sessions.
std::string conn_alive(const std::string& conn) {
  return "(IS_USED_LOCK(CONCAT('simba:w:', " + conn + ")) <=> " + conn + ")";
}

std::string Statements::enqueue(const std::string& mutex, const std::string& contender,
                                const std::string& holder, int64_t gives_up_at) const {
  // The DELETE at READ COMMITTED: it locks only the dead rows it removes,
  // not every row of the queue it reads (hundreds of waiters joining at
  // once waited for each other's locks, past their calls' time-outs).
  return "SET time_zone = '+00:00';SET TRANSACTION ISOLATION LEVEL READ COMMITTED;"
         "DO GET_LOCK(CONCAT('simba:w:', CONNECTION_ID()), 0);DELETE FROM " +
         m_waiters + " WHERE mutex = " + mutex +
         " AND contender <> " + contender +
         " AND NOT " + conn_alive("conn_id") + ";INSERT INTO " +
         m_waiters + " (mutex, contender, queued_at, conn_id, holder, gives_up_at) VALUES (" +
         mutex + ", " + contender + ", " + k_now_us + ", CONNECTION_ID(), " + holder + ", " +
         num(gives_up_at) +
         ") ON DUPLICATE KEY UPDATE conn_id = VALUES(conn_id), holder = VALUES(holder), "
         "gives_up_at = VALUES(gives_up_at), woken_at = 0";
}

std::string Statements::queue(const std::string& mutex, const std::string& contender) const {
  return "SELECT z.contender = " + contender + " FROM " + m_waiters + " z WHERE z.mutex = " +
         mutex + " AND " + conn_alive("z.conn_id") + " ORDER BY z.queued_at";
}

std::string Statements::dequeue(const std::string& mutex, const std::string& contender) const {
  return "DELETE FROM " + m_waiters + " WHERE mutex = " + mutex + " AND contender = " + contender;
}

// The server run and its quarantine (as the PostgreSQL backend's,
// postgres/quarantine_sql.cpp: keep them alike). A server that restarted
// after losing its last writes, or a replica promoted before it got them,
// may have lost a lease whose CMD still runs. The marker (the row of
// "<prefix>server") holds the run that last granted a lease (@@server_id
// and the id a restart empties: run_sql), the end of the quarantine in force and
// the length of the last one. A missing marker or another run: no new
// lease for the longest lease that may still run + 1 s from then. Tables
// simba has just made get a marker of the current run. The marker is only
// written when a loss shows (an UPDATE whose row does not match does not
// wait for it under READ COMMITTED); its end is noted in the lease row
// (q_till) for the statements after, which take no lease before it. The
// marker and the run are read without a lock (a plain SELECT into user
// variables, which the query sets before it reads them: nothing of an
// earlier query's is read), so acquires of other mutexes never wait for
// each other on the marker's row.
std::string Statements::quarantine_sql(const std::string& mutex, int64_t lease_ms) const {
  const std::string now = std::string("(SELECT now_us DIV 1000 FROM ") + m_leases +
                          " WHERE mutex = " + mutex + ")";
  const std::string longest = "GREATEST(" + num(lease_ms) + ", (SELECT COALESCE(MAX(lease_ms), 0) FROM " +
                              m_leases + " WHERE owner <> ''))";
  const std::string run = run_sql(m_run);
  const std::string till = now + " + " + longest + " + 1000";
  return "INSERT IGNORE INTO " + m_run + " VALUES (1, UUID());SELECT " + run + ", (SELECT run FROM " +
         m_server + " WHERE id = 1) INTO @simba_run, @simba_marker;UPDATE " + m_server +
         " SET until_ms = GREATEST(until_ms, " + till + "), longest = " + longest +
         ", run = @simba_run WHERE id = 1 AND run <> @simba_run;INSERT INTO " + m_server +
         " SELECT 1, @simba_run, " + till + ", " + longest +
         " FROM DUAL WHERE @simba_marker IS NULL ON DUPLICATE KEY UPDATE until_ms = "
         "GREATEST(until_ms, VALUES(until_ms));SELECT COALESCE((SELECT until_ms FROM " +
         m_server + " WHERE id = 1), 0) INTO @simba_till;UPDATE " + m_leases +
         " SET q_till = @simba_till WHERE mutex = " + mutex;
}

// The touch's notes but the clock and q_till: the lease as it was.
std::string was_columns() {
  return "wrote = 0, gate_till = 0, was_owner = owner, was_acquired_at = acquired_at, "
         "was_ttl_at = ttl_at, was_transition_at = transition_at, was_token = token, "
         "was_holding = holding";
}

// The row locked, the clock and the lease as it was noted. `insert`
// (acquire): a new mutex gets a free row (no owner, token 0); the others
// write only a row that exists.
std::string Statements::touch(const std::string& mutex, bool insert) const {
  const std::string was = "q_till = 0, " + was_columns();
  if (insert)
    return "INSERT INTO " + m_leases + " (mutex, now_us) VALUES (" + mutex + ", " + k_now_us +
           ") ON DUPLICATE KEY UPDATE now_us = VALUES(now_us), " + was;
  return "UPDATE " + m_leases + " SET now_us = " + k_now_us + ", " + was + " WHERE mutex = " +
         mutex;
}

// One history event of the row `mutex` when the call wrote it (`values`:
// the SELECT list over the row: seq, at, event, owner, holder, token,
// exit_code, held_ms, waited_ms, reason, by_owner).
std::string Statements::event(const std::string& mutex, const std::string& values) const {
  return "SELECT mutex, " + values + " FROM " + m_leases + " WHERE mutex = " + mutex +
         " AND wrote = 1";
}

// The query: the session's clock zone and the isolation level set by the
// query itself, the transaction, the touch, `body` (`statements` of them),
// the events (a SELECT or a UNION of them: written and trimmed to
// history_limit()), the answer, COMMIT.
Query Statements::wrap(const std::string& mutex, const std::string& body, int statements,
                       const std::string& events, const std::string& extra) const {
  std::string sql = std::string(k_begin) + touch(mutex, false) + ";" + body + ";";
  size_t index = 4 + static_cast<size_t>(statements);
  std::vector<std::string> list;
  if (!events.empty()) list.push_back(events);
  if (std::string h = history_sql(mutex, list, ""); !h.empty()) {
    sql += h;
    index += 2;
  }
  return {sql + answer_sql(mutex, extra, false) + ";COMMIT", index};
}

// The events written (one REPLACE each) and the history trimmed, each
// statement ending in ';' (none without events or history): only when the
// call wrote the row and `guard` holds. One REPLACE of a UNION would build
// a temporary table, the costliest statement of an acquire.
std::string Statements::history_sql(const std::string& mutex,
                                     const std::vector<std::string>& events,
                                     const std::string& guard) const {
  const int64_t limit = history_limit();
  if (events.empty() || limit <= 0) return "";
  std::string sql;
  for (const std::string& e : events)
    sql += "REPLACE INTO " + m_history +
           " (mutex, seq, at, event, owner, holder, token, exit_code, held_ms, waited_ms, "
           "reason, by_owner) " +
           e + ";";
  return sql + "DELETE h FROM " + m_history + " h JOIN " + m_leases +
         " l ON l.mutex = h.mutex WHERE h.mutex = " + mutex + guard +
         " AND l.wrote = 1 AND h.seq <= l.history_seq - " + num(limit) + ";";
}

// The answer (statements.hpp) from the row as the call left it; `looked`
// (acquire): the lease its look read instead when the mutex was taken.
std::string Statements::answer_sql(const std::string& mutex, const std::string& extra,
                                   bool looked) const {
  auto col = [&](const std::string& var, const std::string& expr) {
    return looked ? "IF(@simba_busy > 0, " + var + ", " + expr + ")" : expr;
  };
  return "SELECT " + col("@simba_now", "COALESCE(l.now_us DIV 1000, " + std::string(k_now_ms) + ")") +
         ", " + col("0", "COALESCE(l.wrote, 0)") + ", " +
         col("@simba_owner", "COALESCE(l.owner, '')") + ", " +
         col("@simba_acquired_at", "COALESCE(l.acquired_at, 0)") + ", " +
         col("@simba_ttl_at", "COALESCE(LEAST(l.ttl_at, GREATEST(l.transition_at, l.gate_till)), 0)") +
         ", " + col("@simba_transition_at", "COALESCE(GREATEST(l.transition_at, l.gate_till), 0)") +
         ", " + col("@simba_token", "COALESCE(l.token, 0)") + ", " +
         col("@simba_holding", "COALESCE(l.holding, 0)") + extra + ", " +
         col("0", "COALESCE(l.q_till, 0)") + " FROM (SELECT 1) d LEFT JOIN " + m_leases +
         " l ON l.mutex = " + mutex;
}

// The lease renewed: `target` is what follows UPDATE (the table, or a
// join whose row to write is `p`, its alias and a dot).
std::string renew_sql(const std::string& target, const Call& c, const std::string& where,
                      const std::string& p) {
  const std::string now = "(" + p + "now_us DIV 1000)";
  return "UPDATE " + target + " SET " + p + "ttl_at = " + now + " + " + num(c.ttl_ms) + ", " + p +
         "transition_at = " + now + " + " + num(c.ttl_ms + c.transition_ms) + ", " + p +
         "holding = 0, " + p + "lease_ms = " + num(c.ttl_ms + c.transition_ms) + ", " + p +
         "wrote = 1 WHERE " + where;
}

// A new lease on the row (`where`: when), its token `token` (above the
// last one and the clock in microseconds). A lease that ran out
// unreleased is one loss, unless it was only held or its holder's lost
// event counted it (lost_token).
std::string take_sql(const std::string& target, const Call& c, const std::string& where,
                     const std::string& p, const std::string& token) {
  const std::string now = "(" + p + "now_us DIV 1000)";
  const std::string ttl = num(c.ttl_ms), lease = num(c.ttl_ms + c.transition_ms);
  return "UPDATE " + target + " SET " + p + "losses = " + p + "losses + IF(" + p +
         "was_owner <> '' AND " + p + "was_holding = 0 AND NOT (" + p + "lost_token <=> " + p +
         "was_token), 1, 0), " + p + "history_seq = " + p + "history_seq + IF(" + p +
         "was_owner <> '', 2, 1), " + p + "acquisitions = " + p + "acquisitions + 1, " + p +
         "token = " + token + ", " + p + "holder_token = " + token + ", " + p +
         "holder = " + c.holder + ", " + p + "owner = " + c.contender + ", " + p +
         "acquired_at = " + now + ", " + p + "ttl_at = " + now + " + " + ttl + ", " + p +
         "transition_at = " + now + " + " + lease + ", " + p + "holding = 0, " + p +
         "lease_ms = " + lease + ", " + p + "wrote = 1 WHERE " + where;
}

namespace {

constexpr const char* k_next_token = "GREATEST(was_token + 1, now_us)";

} // namespace

// A live waiter of the queue (alias `z`, `now` in ms): its connection is
// there, or a release from another process ended it to wake it
// (leaving_hint: woken_at) less than the fallback's time ago, and it is
// on its way back (it keeps its place).
std::string live_waiter(const std::string& z, const std::string& now) {
  return "(" + conn_alive(z + ".conn_id") + " OR " + z +
         ".woken_at > " + now + " - " + num(core::k_fifo_fallback_ms) + ")";
}

// First come, first served (core/fifo.hpp): for k_fifo_fallback_ms after
// the lease ended (ran out, or released: a newcomer must not take what the
// release's hint woke the first waiter for, mysql/wakeups.hpp), a
// contender with a live waiter queued before it is refused, and shown the
// mutex busy until then. Only refuses; the queue is read only in that
// second. The condition on the lease row (its columns as committed: the
// look's, Statements::look) at the clock `now`.
std::string Statements::gated(const Call& c, const std::string& now) const {
  const std::string fallback = num(core::k_fifo_fallback_ms);
  // The waiter the release's hint woke holds the hint lock now (the server
  // gives it to one at a time, not always in the order of queued_at): it
  // goes through.
  const std::string woken =
      c.hint.empty() ? ""
                     : " AND NOT EXISTS (SELECT 1 FROM " + m_waiters + " w WHERE w.mutex = " +
                           c.mutex + " AND w.contender = " + c.contender +
                           " AND w.conn_id <=> IS_USED_LOCK(" + c.hint + "))";
  // A waiter ahead that a release from another process woke by ending
  // its session (woken_at) still goes first, whoever holds the lock now.
  const std::string ahead = woken.empty() ? live_waiter("z", now)
                                          : "(z.woken_at > " + now + " - " + fallback +
                                                " OR (" + conn_alive("z.conn_id") + woken +
                                                "))";
  return "(token > 0 AND transition_at <= " + now + " AND " + now + " < transition_at + " +
         fallback + " AND EXISTS (SELECT 1 FROM " + m_waiters + " z WHERE z.mutex = " + c.mutex +
         " AND z.contender <> " + c.contender +
         " AND z.queued_at < COALESCE((SELECT y.queued_at FROM " + m_waiters +
         " y WHERE y.mutex = " + c.mutex + " AND y.contender = " + c.contender +
         "), 9223372036854775807) AND " + ahead + "))";
}

// How long the contender waited in the queue (waited_ms of "acquired"): 0
// when it never queued.
std::string Statements::waited(const Call& c) const {
  return "GREATEST(0, " + n() + " - COALESCE((SELECT z.queued_at DIV 1000 FROM " + m_waiters +
         " z WHERE z.mutex = " + c.mutex + " AND z.contender = " + c.contender + "), " + n() +
         "))";
}

// Events only of a new lease: "expired" for the one it replaces when that
// still had an owner, then "acquired" (`guard`: a condition more, " AND ...").
std::vector<std::string> Statements::acquired_event_list(const Call& c,
                                                         const std::string& guard) const {
  return {
      event(c.mutex, "history_seq - 1, was_transition_at, 'expired', was_owner, NULL, "
                     "was_token, NULL, was_transition_at - was_acquired_at, NULL, NULL, NULL") +
          guard + " AND token <> was_token AND was_owner <> ''",
      event(c.mutex, "history_seq, " + n() + ", 'acquired', owner, holder, token, NULL, NULL, " +
                         waited(c) + ", NULL, NULL") +
          guard + " AND token <> was_token"};
}

// The same as one SELECT.
std::string Statements::acquired_events(const Call& c) const {
  const std::vector<std::string> e = acquired_event_list(c, "");
  return e[0] + " UNION ALL " + e[1];
}

namespace {

// Each statement of an acquire after its look (Statements::look) holds
// this: the look found the mutex free or the contender's, and the call
// goes on. A user variable set by an earlier statement is a constant to
// the optimizer: when it does not hold, "Impossible WHERE", and no row is
// read or locked.
const char* const k_go = " AND @simba_busy = 0";

} // namespace

// The look: the clock, then a plain read of the row (READ COMMITTED: the
// last committed lease, no lock). A newcomer mostly finds the mutex
// taken; it then waits without having locked the row that the owner's
// release and the woken waiter's acquire need (each such acquire held it
// 8-10 ms under load, 17 statements). @simba_busy is 1 when the lease is
// valid and not the contender's (or revoked): no statement after it could
// write then (the renewal is the valid owner's, a new lease needs one
// that ran out), so the call changes nothing, and answers the lease as
// read, at the clock read. A lease that ends after the look is the next
// call's: the hint wakes it after the release's COMMIT.
// With the quarantine, the look's read of the row reads the server run
// and the marker too (run_check), in that one statement: a statement
// opens every table it names before it reads any, so a marker read there
// is read after the leases' table exists, hence after the marker that
// the tables' maker wrote before it made that table (schema_sql). Read by
// a statement of its own before the look, on tables another first use was
// making, it was read before that marker, the leases' table was there by
// the look, and the run check quarantined tables just made (8 first uses
// at once, e2e/test_mysql_first_use_race: "no simba marker of this server
// run", once in 40-120 runs). 2 statements, 3 with the quarantine.
std::string Statements::look(const Call& c) const {
  std::string clock = "SELECT " + std::string(k_now_ms) + " INTO @simba_now";
  std::string run_columns, run_into;
  if (c.quarantine) {
    clock = "INSERT IGNORE INTO " + m_run + " VALUES (1, UUID());" + clock;
    run_columns = ", " + run_sql(m_run) + ", (SELECT run FROM " + m_server + " WHERE id = 1)";
    run_into = ", @simba_run, @simba_marker";
  }
  // Busy: valid and another's; or ended, but the first-come gate keeps it
  // for a waiter ahead (gated): shown busy until the gate opens.
  const std::string until =
      "IF(transition_at > @simba_now, transition_at, transition_at + " +
      num(core::k_fifo_fallback_ms) + ")";
  return clock + ";SELECT COUNT(*), MAX(owner), MAX(acquired_at), MAX(LEAST(ttl_at, " + until +
         ")), MAX(" + until + "), MAX(token), MAX(holding)" + run_columns +
         " INTO @simba_busy, @simba_owner, @simba_acquired_at, "
         "@simba_ttl_at, @simba_transition_at, @simba_token, @simba_holding" + run_into + " FROM " +
         m_leases + " WHERE mutex = " + c.mutex + " AND ((transition_at > @simba_now AND NOT (owner = " +
         c.contender + " AND owner <> '')) OR " + gated(c, "@simba_now") + ")";
}

// quarantine_sql's check of the server run, in one statement, before the
// touch (so the row's lock is not held meanwhile) and on the look's clock:
// earlier than the touch's, but after any restart the check can find, so
// its end still covers every lease the restart may have lost. It runs
// only when the run the look read differs from the marker or there is no
// marker (constants once read: no read of the marker's row otherwise);
// the marker found (locked) decides as quarantine_sql's UPDATE and
// INSERT would: another run, the quarantine begins (its end kept if
// later), else only a marker made meanwhile by another has its end
// raised. `run` is assigned last: the IFs read the marker's run as it
// was, whether the server assigns left to right or all at once. The touch
// reads the quarantine's end (looked_touch).
std::string Statements::run_check(const Call& c) const {
  const std::string longest = "GREATEST(" + num(c.ttl_ms + c.transition_ms) +
                              ", (SELECT COALESCE(MAX(lease_ms), 0) FROM " + m_leases +
                              " WHERE owner <> ''))";
  return "INSERT INTO " + m_server + " SELECT 1, @simba_run, @simba_now + " + longest +
         " + 1000, " + longest + " FROM DUAL WHERE NOT (@simba_marker <=> @simba_run)" + k_go +
         " ON DUPLICATE KEY UPDATE until_ms = IF(run <> VALUES(run) OR @simba_marker IS NULL, "
         "GREATEST(until_ms, VALUES(until_ms)), until_ms), longest = IF(run <> VALUES(run), "
         "VALUES(longest), longest), run = VALUES(run)";
}

// An acquire's touch (touch(mutex, true)), only when the look let the call
// go on; it notes the quarantine's end in force (q_till) too.
std::string Statements::looked_touch(const Call& c) const {
  const std::string till =
      c.quarantine ? "COALESCE((SELECT until_ms FROM " + m_server + " WHERE id = 1), 0)" : "0";
  return "INSERT INTO " + m_leases + " (mutex, now_us, q_till) SELECT " + c.mutex + ", " +
         k_now_us + ", " + till + " FROM DUAL WHERE 1" + k_go +
         " ON DUPLICATE KEY UPDATE now_us = VALUES(now_us), q_till = VALUES(q_till), " +
         was_columns();
}

// DESIGN §2: the valid owner renews (acquired_at and the token stay); a
// row whose lease ran out (or a new one) takes a new lease, its token
// above the last and the clock in microseconds; anyone else changes
// nothing. The first UPDATE's renewal leaves the lease valid, so the
// second's condition (ran out) excludes it: at most one of them writes.
// The look first (look): a lease taken by another ends the call there.
Query Statements::acquire(const Call& c) const {
  const std::string row = "mutex = " + c.mutex + k_go + " AND ";
  std::string renew = renew_sql(
      m_leases, c, row + "owner = " + c.contender + " AND owner <> '' AND transition_at > " + n(),
      "");
  std::string take = take_sql(m_leases, c,
                              row + "wrote = 0 AND transition_at <= " + n() + " AND " + n() +
                                  " >= q_till AND " + n() + " >= gate_till",
                              "", k_next_token);
  std::string sql = std::string(k_begin) + look(c) + ";";
  size_t index = 5;
  if (c.quarantine) {
    sql += run_check(c) + ";";
    index += 2;
  }
  sql += looked_touch(c) + ";" + renew + ";" + take + ";";
  index += 3;
  if (std::string h = history_sql(c.mutex, acquired_event_list(c, k_go), k_go); !h.empty()) {
    sql += h;
    index += 3;
  }
  sql += answer_sql(c.mutex, "", true) + ";COMMIT";
  return taking_hint(c, m_leases, {sql, index}, k_go);
}

// The hint lock (wakeups.hpp): an acquisition that granted (or renewed) a
// lease takes it on this session, unless the session has it already
// (GET_LOCK would count it twice); before the COMMIT, so that no waiter
// is woken by a lock let go in between.
Query Statements::taking_hint(const Call& c, const std::string& leases, Query q,
                              const std::string& guard) {
  if (c.hint.empty()) return q;
  size_t commit = q.sql.rfind(";COMMIT");
  q.sql.insert(commit, ";SELECT IF(wrote = 1 AND owner = " + c.contender +
                           " AND NOT (IS_USED_LOCK(" + c.hint + ") <=> CONNECTION_ID()), GET_LOCK(" +
                           c.hint + ", 0), NULL) FROM " + leases + " WHERE mutex = " + c.mutex +
                           guard);
  return q;
}

// A release lets the hint lock go after its COMMIT: the waiter it wakes
// finds the mutex free. A release from another process (release --force
// or --lease, the owner's end of a revoked lease after its session lost
// the lock) does not hold it: when a waiter's connection does (it found
// the mutex taken and waits for its timer), the query names it
// (hint_holder), and the backend ends it (KILL), so that the lock goes on
// to the next waiter all the same (wakeups.hpp). Read before this
// session lets its own go, which is not another's.
Query Statements::leaving_hint(const Call& c, Query q) const {
  if (c.hint.empty()) return q;
  // Whether this call freed the mutex, noted before the COMMIT (a release
  // that changed nothing keeps the lock of a lease it still has; a
  // revoked lease whose CMD may run is not free yet).
  size_t commit = q.sql.rfind(";COMMIT");
  q.sql.insert(commit, ";SELECT COALESCE((SELECT wrote = 1 AND owner = '' AND transition_at <= " +
                           n() + " FROM " + m_leases + " WHERE mutex = " + c.mutex +
                           "), 0) INTO @simba_released");
  // The results: the answer, the SELECT INTO, COMMIT, the next SELECT
  // INTO; then the hint lock's other holder.
  q.hint_holder = q.answer + 4;
  // Only another waiter's hint connection (its row names it: the
  // releaser's own passes its lock on, release_hint), never an owner's
  // session, which may be inside a query: a KILL there aborts it. An
  // owner's session lets the lock go at its release or exit.
  const std::string other = "IF(@simba_released = 1 AND NOT (IS_USED_LOCK(" + c.hint +
                            ") <=> CONNECTION_ID()) AND EXISTS (SELECT 1 FROM " + m_waiters +
                            " WHERE conn_id = IS_USED_LOCK(" + c.hint + ") AND mutex = " +
                            c.queue + " AND contender <> " + c.contender + "), IS_USED_LOCK(" +
                            c.hint + "), NULL)";
  // Into a variable first: a constant to the UPDATE below, which finds
  // its row by the index on conn_id (with the expression itself, it read
  // every row of the queue).
  q.sql += ";SELECT " + other + " INTO @simba_other;SELECT @simba_other";
  // A waiter whose session ends keeps counting as live (live_waiter); the
  // owner whose lease ended, if it was one, no longer does.
  if (!c.queue.empty())
    q.sql += ";UPDATE " + m_waiters + " SET woken_at = 0 WHERE mutex = " + c.queue +
             " AND @simba_released = 1 AND contender = (SELECT was_owner FROM " + m_leases +
             " WHERE mutex = " + c.mutex + ") AND woken_at <> 0";
  q.sql += ";UPDATE " + m_waiters + " SET woken_at = " + k_now_ms + " WHERE conn_id = @simba_other";
  q.sql += ";DO IF(@simba_released = 1, RELEASE_LOCK(" + c.hint + "), 0)";
  return q;
}

// The touch of an acquisition makes the row of a new mutex.
Query Statements::creating(const std::string& mutex, Query q) const {
  q.sql.replace(q.sql.find(touch(mutex, false)), touch(mutex, false).size(), touch(mutex, true));
  return q;
}

namespace {

// The done record's columns in an answer.
constexpr const char* k_done_columns =
    ", l.once_window, l.once_label, l.once_host, l.once_token, l.once_started_at, "
    "l.once_finished, l.once_exit_code, l.once_finished_at, l.once_period, l.once_offset";

// Terms of acquire_once's decision, spelled out as the PostgreSQL
// backend's (postgres/statements.cpp, once_terms; core::judge_window and
// core::may_run): DIFFER, the record's run had other terms and its window
// lasts (simba then exits 64); MAY, the contender's window W may run (an
// unfinished record of it counts as failed).
std::string may_run_sql(const core::OncePer& o, const std::string& w) {
  const std::string p = num(o.period_ms), off = num(o.offset_ms);
  const std::string differ = "COALESCE(once_period > 0 AND (once_period <> " + p +
                             " OR once_offset <> " + off + ") AND " + n() +
                             " < once_window + once_period, 0)";
  return "(NOT " + differ + " AND (once_window IS NULL OR once_window < " + w +
         " OR (once_window = " + w + " AND " + (o.retry_failed ? "1" : "0") +
         " = 1 AND NOT COALESCE(once_finished = 1 AND once_exit_code = 0, 0))))";
}

} // namespace

std::string window_start_sql(const std::string& now, const std::string& period,
                             const std::string& offset) {
  // MOD keeps the dividend's sign: the distance from the window's start is
  // made non-negative before it is taken off (times before the epoch
  // floor, as in C++).
  return "(" + now + " - MOD(MOD(" + now + " - " + offset + ", " + period + ") + " + period +
         ", " + period + "))";
}

// The decision first (once_case, a column of the row: 1 our lease without
// its record, the window may run: the record starts; 2 the same but it may
// not: our lease ends now; 3 free and it may run: a new lease and its
// record; 4 our lease with its record: a renewal; 0 nothing), then one
// statement per case.
Query Statements::acquire_once(const Call& c, const core::OncePer& o, const std::string& label,
                               const std::string& host) const {
  const std::string w =
      o.window != 0 ? num(o.window)
                    : window_start_sql(n(), num(o.period_ms), num(o.offset_ms));
  const std::string may = may_run_sql(o, w);
  std::string decide =
      "UPDATE " + m_leases + " SET once_case = CASE WHEN transition_at > " + n() +
      " AND owner = " + c.contender +
      " AND owner <> '' THEN IF(once_window IS NOT NULL AND once_token = token, 4, IF(" + may +
      ", 1, 2)) WHEN transition_at <= " + n() + " AND " + n() + " >= q_till AND " + may +
      " THEN 3 ELSE 0 END WHERE mutex = " + c.mutex;
  std::string end = "UPDATE " + m_leases + " SET owner = '', ttl_at = LEAST(was_ttl_at, " + n() +
                    "), transition_at = " + n() + ", holding = 0, wrote = 1 WHERE mutex = " +
                    c.mutex + " AND once_case = 2";
  std::string record = "UPDATE " + m_leases + " SET once_window = " + w +
                       ", once_label = " + hex_or_empty(label) + ", once_host = " +
                       hex_or_empty(host) + ", once_token = token, once_started_at = " + n() +
                       ", once_finished = 0, once_exit_code = 0, once_finished_at = 0, "
                       "once_period = " + num(o.period_ms) + ", once_offset = " +
                       num(o.offset_ms) + " WHERE mutex = " + c.mutex + " AND once_case IN (1, 3)";
  const std::string row = "mutex = " + c.mutex + " AND ";
  std::string body = decide + ";" + renew_sql(m_leases, c, row + "once_case IN (1, 4)", "") +
                     ";" + end + ";" + take_sql(m_leases, c, row + "once_case = 3", "", k_next_token) +
                     ";" + record;
  if (c.quarantine) body = quarantine_sql(c.mutex, c.ttl_ms + c.transition_ms) + ";" + body;
  return taking_hint(
      c, m_leases,
      creating(c.mutex, wrap(c.mutex, body, 5 + (c.quarantine ? k_quarantine_statements : 0),
                             acquired_events(c), k_done_columns)));
}

// release, and the done record of the run that ends (the one with its
// token) gets the exit code and the time.
Query Statements::release_once(const Call& c, int exit_code) const {
  Query q = release(c, std::to_string(exit_code));
  const std::string finish = "UPDATE " + m_leases +
                             " SET once_finished = 1, once_exit_code = " +
                             std::to_string(exit_code) + ", once_finished_at = " + n() +
                             " WHERE mutex = " + c.mutex + " AND wrote = 1 AND once_token = token";
  // After the release's UPDATE (statement 4), before its events.
  size_t at = nth_statement_end(q.sql, 4);
  q.sql.insert(at, finish + ";");
  q.answer += 1;
  if (q.hint_holder != 0) q.hint_holder += 1;
  size_t select = q.sql.rfind(";SELECT COALESCE(l.now_us");
  q.sql.insert(q.sql.find(", COALESCE(l.q_till, 0)", select), k_done_columns);
  return q;
}

Query Statements::done_record(const std::string& mutex) const {
  Query q = get(mutex);
  q.sql.insert(q.sql.find(", COALESCE((SELECT until_ms"), k_done_columns);
  return q;
}

namespace {

// guard's assignments by mode (statements.hpp).
std::string guard_set(const std::string& mode, int64_t ttl_ms, int64_t transition_ms) {
  const std::string ttl = num(ttl_ms), lease = num(ttl_ms + transition_ms);
  const std::string N = n();
  if (mode == "keep") {
    // A lease only held is kept to now + ttl + transition; a guarded one
    // never shortened.
    const std::string ttl_at = "GREATEST(" + N + " + " + ttl + ", was_ttl_at)";
    return "lease_ms = GREATEST(lease_ms, " + lease + "), ttl_at = IF(was_holding = 1, " + N +
           " + " + lease + ", " + ttl_at +
           "), transition_at = IF(was_holding = 1, " + N + " + " + lease + ", GREATEST(" +
           ttl_at + " + " + num(transition_ms) + ", was_transition_at))";
  }
  return "ttl_at = " + N + " + " + ttl + ", transition_at = " + N + " + " + lease +
         ", lease_ms = " + lease + ", holding = " + (mode == "hold" ? "1" : "0");
}

} // namespace

Query Statements::guard(const Call& c, const std::string& mode) const {
  return wrap(c.mutex,
              "UPDATE " + m_leases + " SET " + guard_set(mode, c.ttl_ms, c.transition_ms) +
                  ", wrote = 1 WHERE mutex = " + c.mutex + " AND owner = " + c.contender +
                  " AND owner <> '' AND token = " + unum(c.token) + " AND transition_at > " + n() +
                  (mode == "step" ? " AND holding = 1" : ""),
              1, "");
}

Query Statements::guard_mark(const Call& c, bool record) const {
  return wrap(c.mutex,
              "UPDATE " + m_leases + " SET " + guard_set("guard", c.ttl_ms, c.transition_ms) +
                  ", was_last_run_at = last_run_at, last_run_at = " +
                  (record ? n() : std::string("last_run_at")) + ", wrote = 1 WHERE mutex = " +
                  c.mutex + " AND owner = " + c.contender + " AND owner <> '' AND token = " +
                  unum(c.token) + " AND transition_at > " + n(),
              1, "", ", IF(l.wrote = 1, l.was_last_run_at, NULL)");
}

// The lease ends now; the row keeps the token. token 0: whatever lease
// the contender owns.
Query Statements::release(const Call& c, const std::string& exit_code) const {
  std::string sql = "UPDATE " + m_leases +
                    " SET history_seq = history_seq + 1, owner = '', holding = 0, ttl_at = "
                    "LEAST(was_ttl_at, " +
                    n() + "), transition_at = " + n() + ", wrote = 1 WHERE mutex = " + c.mutex +
                    " AND owner = " + c.contender + " AND owner <> '' AND (" + unum(c.token) +
                    " = 0 OR token = " + unum(c.token) + ") AND transition_at > " + n();
  return leaving_hint(
      c,
      wrap(c.mutex, sql, 1,
              event(c.mutex, "history_seq, " + n() + ", 'released', was_owner, NULL, token, " +
                                 exit_code + ", " + n() + " - acquired_at, NULL, NULL, NULL")));
}

// A lease only held ends now; one whose CMD may run is revoked: no owner,
// transition_at kept (backend.hpp). by_owner (release --lease): a lease
// only held ends as a release, no loss. c.holder: who forces it.
Query Statements::force_release(const Call& c, bool by_owner) const {
  const std::string own = by_owner ? "1" : "0";
  std::string sql =
      "UPDATE " + m_leases +
      " SET history_seq = history_seq + 1, losses = losses + IF(NOT (lost_token <=> was_token) "
      "AND NOT (" +
      own + " = 1 AND was_holding = 1), 1, 0), owner = '', ttl_at = LEAST(was_ttl_at, " + n() +
      "), transition_at = IF(was_holding = 1, " + n() +
      ", was_transition_at), holding = 0, wrote = 1 WHERE mutex = " + c.mutex +
      " AND owner <> '' AND transition_at > " + n() + " AND (" + unum(c.token) +
      " = 0 OR token = " + unum(c.token) + ")";
  const std::string released = "(" + own + " = 1 AND transition_at <= " + n() + ")";
  return leaving_hint(c, wrap(c.mutex, sql, 1,
              event(c.mutex, "history_seq, " + n() + ", IF(" + released +
                                 ", 'released', 'forced'), was_owner, IF(" + released +
                                 ", NULL, " + c.holder + "), was_token, NULL, " + n() +
                                 " - was_acquired_at, NULL, NULL, NULL")));
}

// The lease revoked by force_release with token c.token ends now. No
// event: the revocation wrote 'forced', the owner 'lost'.
Query Statements::end_revoked(const Call& c) const {
  return leaving_hint(c, wrap(c.mutex,
              "UPDATE " + m_leases + " SET holding = 0, ttl_at = LEAST(was_ttl_at, " + n() +
                  "), transition_at = " + n() + ", wrote = 1 WHERE mutex = " + c.mutex +
                  " AND owner = '' AND " + unum(c.token) + " <> 0 AND token = " + unum(c.token) +
                  " AND transition_at > " + n(),
              1, ""));
}

Query Statements::get(const std::string& mutex) const {
  return {"SET time_zone = '+00:00';SELECT " + std::string(k_now_ms) +
              ", 0, COALESCE(l.owner, ''), COALESCE(l.acquired_at, 0), COALESCE(l.ttl_at, 0), "
              "COALESCE(l.transition_at, 0), COALESCE(l.token, 0), COALESCE(l.holding, 0), "
              "COALESCE((SELECT until_ms FROM " +
              m_server + " WHERE id = 1), 0) FROM (SELECT 1) d LEFT JOIN " + m_leases +
              " l ON l.mutex = " + mutex,
          1};
}

// History only (backend.hpp): the row's event count, losses and
// lost_token; never its lease. A loss when the row still shows the lease
// as the contender's (valid or run out: noted) or has no trace of it.
Query Statements::record_lost(const Call& c, const std::string& exit_code, int64_t held_ms,
                              const std::string& reason, const std::string& by) const {
  const std::string token = unum(c.token);
  const std::string mine =
      "(owner = " + c.contender + " AND owner <> '' AND token = " + token + ")";
  std::string sql = "UPDATE " + m_leases +
                    " SET history_seq = history_seq + 1, losses = losses + IF(" + mine +
                    " OR token < " + token + ", 1, 0), lost_token = IF(" + mine + ", " + token +
                    ", lost_token), wrote = 1 WHERE mutex = " + c.mutex;
  return wrap(c.mutex, sql, 1,
              event(c.mutex, "history_seq, " + n() + ", 'lost', " + c.contender + ", " +
                                 c.holder + ", " + token + ", " + exit_code + ", " +
                                 num(held_ms) + ", NULL, " + reason + ", " + by));
}

Query Statements::record_skipped(const Call& c, const std::string& exit_code,
                                 const std::string& held_ms, const std::string& reason,
                                 const std::string& by, int64_t waited_ms) const {
  return wrap(c.mutex,
              "UPDATE " + m_leases + " SET history_seq = history_seq + 1, wrote = 1 WHERE mutex = " +
                  c.mutex,
              1,
              event(c.mutex, "history_seq, " + n() + ", 'skipped', " + c.contender + ", " +
                                 c.holder + ", " + unum(c.token) + ", " + exit_code + ", " +
                                 held_ms + ", " + num(waited_ms) + ", " + reason + ", " + by));
}

Query Statements::inspect(const std::string& mutex) const {
  // One mutex: its slots' rows too (core/slots.hpp), a range of the key.
  std::string where = mutex.empty() ? ""
                                    : " AND (mutex = " + wire::hex_literal(mutex) + " OR (mutex > " +
                                          wire::hex_literal(mutex + "#") + " AND mutex < " +
                                          wire::hex_literal(mutex + "$") + "))";
  return {"SET time_zone = '+00:00';SELECT " + std::string(k_now_ms) +
              ", COALESCE((SELECT until_ms FROM " + m_server + " WHERE id = 1), 0)" +
              ";SELECT mutex, owner, acquired_at, ttl_at, transition_at, token, holding, "
              "IF(holder_token = token, holder, NULL), acquisitions, losses FROM " +
              m_leases + " WHERE token > 0" + where +
              " ORDER BY mutex;SELECT z.mutex, z.contender, z.queued_at DIV 1000, z.holder, "
              "z.gives_up_at FROM " +
              m_waiters + " z WHERE " + conn_alive("z.conn_id") +
              (mutex.empty() ? "" : " AND z.mutex = " + wire::hex_literal(mutex)) +
              " ORDER BY z.mutex, z.queued_at",
          2};
}

Query Statements::history(const std::string& mutex, int64_t since_ms) const {
  std::string where;
  if (!mutex.empty())
    where = " AND (mutex = " + wire::hex_literal(mutex) + " OR LEFT(mutex, " +
            num(static_cast<int64_t>(mutex.size()) + 1) + ") = " + wire::hex_literal(mutex + "#") +
            ")";
  return {"SET time_zone = '+00:00';SELECT " + std::string(k_now_ms) +
              ";SELECT mutex, at, event, owner, holder, token, exit_code, held_ms, waited_ms, "
              "reason, by_owner FROM " +
              m_history + " WHERE at >= " + num(since_ms) + where + " ORDER BY at, mutex, seq",
          2};
}

} // namespace simba::backend::mysql
