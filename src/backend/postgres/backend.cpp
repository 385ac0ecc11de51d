// The PostgreSQL Backend: each operation one statement on the main
// connection (statements.cpp), its row read into a Reply (rows.cpp).
// Over 500 lines: one class, whose every operation is a few lines of the
// same shape; the statements, rows, messages and wake-ups live apart.
#include "backend/postgres/postgres.hpp"

#include "backend/history.hpp"
#include "backend/holder.hpp"
#include "backend/net/deadline_io.hpp"
#include "backend/postgres/catalog.hpp"
#include "backend/postgres/connection.hpp"
#include "backend/postgres/doctor.hpp"
#include "backend/postgres/messages.hpp"
#include "backend/postgres/rows.hpp"
#include "backend/postgres/setup_sql.hpp"
#include "backend/postgres/statements.hpp"
#include "backend/postgres/wakeups.hpp"
#include "backend/uri_parts.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/slots.hpp"
#include "sys/clock.hpp"

#include <algorithm>

namespace simba::backend {
namespace {

using pg::k_done_columns;
using pg::number;
using pg::read_done;
using pg::read_lease;
using pg::Result;
using pg::show_quarantine;

// SQLSTATEs: the tables or the schema are missing; columns are (tables
// of a simba without status: the schema adds them); a concurrent CREATE
// ... IF NOT EXISTS won the race (a duplicate key, relation or type), or
// two first uses deadlocked on the schema's tables (the server aborts one
// of them): the next try finds what the other made.
bool missing_tables(const std::string& state) { return state == "42P01" || state == "3F000"; }
bool missing_columns(const std::string& state) { return state == "42703"; }
bool lost_create_race(const std::string& state) {
  return state == "23505" || state == "42P07" || state == "42710" || state == "40P01";
}
// Tries of the schema: each lost race means that another first use made
// the tables meanwhile.
constexpr int k_schema_tries = 6;
// Tries of a statement that the server chose as a deadlock's victim
// (40P01, rolled back: nothing applied), each within the call's budget:
// the other side went on once this one gave way.
constexpr int k_deadlock_tries = 4;
// Tries of a statement of slots at most (PostgresBackend::run_slot): each
// retry means that another writer of the mutex's slots went first.
constexpr int k_slot_tries = 50;

// A slot's row ("m#k", core/slots.hpp): its statements keep the marker.
bool is_slot_row(const std::string& name) { return name.find('#') != std::string::npos; }

class PostgresBackend final : public Backend {
public:
  explicit PostgresBackend(PostgresUri uri)
      : m_uri(std::move(uri)), m_sql(pg::make_statements(m_uri.schema, m_uri.prefix)),
        m_describe(describe_uri(m_uri)), m_quarantine(m_uri.quarantine ? "t" : "f"),
        m_wakeups(
            m_uri, m_sql,
            [this](const std::string& mutex, const std::string& contender) {
              return read_place(mutex, contender);
            },
            [this](const std::string& channel, const std::string& payload) {
              return call("SELECT pg_notify($1, $2)", {channel, payload}, m_uri.timeout_ms).ok;
            }) {}

  void open(Access access);

  Reply acquire(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                int64_t transition_ms, int64_t timeout_ms) override {
    return run(m_sql.acquire(),
               {mutex, contender, std::to_string(ttl_ms), std::to_string(transition_ms),
                m_quarantine, m_holder},
               timeout_ms);
  }

  Reply guard(const std::string& mutex, const std::string& contender, uint64_t token,
              int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    return renew(mutex, contender, token, ttl_ms, transition_ms, "guard", timeout_ms);
  }

  Reply begin_step(const std::string& mutex, const std::string& contender, uint64_t token,
                   int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    return renew(mutex, contender, token, ttl_ms, transition_ms, "step", timeout_ms);
  }

  Reply hold(const std::string& mutex, const std::string& contender, uint64_t token,
             int64_t hold_ms, int64_t timeout_ms) override {
    return renew(mutex, contender, token, hold_ms, 0, "hold", timeout_ms);
  }

  Reply extend(const std::string& mutex, const std::string& contender, uint64_t token,
               int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    return renew(mutex, contender, token, ttl_ms, transition_ms, "keep", timeout_ms);
  }

  Reply release(const std::string& mutex, const std::string& contender, uint64_t token,
                int64_t timeout_ms) override {
    if (is_slot_row(mutex))
      return run_slot(m_sql.release_slot(), {mutex, contender, std::to_string(token), m_exit_code},
                      timeout_ms);
    return left_queue(
        run(m_sql.release(), {mutex, contender, std::to_string(token), m_exit_code}, timeout_ms),
        mutex, contender);
  }

  Reply end_revoked(const std::string& mutex, const std::string& contender, uint64_t token,
                    int64_t timeout_ms) override {
    if (is_slot_row(mutex))
      return Reply::failure(Reply::Status::failed, "a slot's revoked lease runs out");
    return run(m_sql.end_revoked(), {mutex, std::to_string(token), contender}, timeout_ms);
  }

  // A slot's: the owner and the waiters listen on the mutex's channel.
  Reply force_release(const std::string& mutex, uint64_t token, int64_t timeout_ms) override {
    return end_lease(mutex, token, timeout_ms, false);
  }

  // A slot's lease stays forced (force_release_slot has no by_owner yet).
  Reply release_lease(const std::string& mutex, uint64_t token, int64_t timeout_ms) override {
    return end_lease(mutex, token, timeout_ms, true);
  }

  Reply end_lease(const std::string& mutex, uint64_t token, int64_t timeout_ms, bool by_owner) {
    if (is_slot_row(mutex))
      return run_slot(m_sql.force_release_slot(),
                      {mutex, std::to_string(token),
                       pg::channel(m_uri, std::string(core::mutex_of_row(mutex))), m_holder},
                      timeout_ms);
    return run(m_sql.force_release(),
               {mutex, std::to_string(token), pg::channel(m_uri, mutex), m_holder,
                by_owner ? "true" : "false"},
               timeout_ms);
  }

  // --slots N (slots_sql.hpp); N = 1 is the plain acquire, its statement
  // unchanged. Taking or renewing a slot left the queue in the same
  // statement (our wake-ups are told: no I/O).
  bool has_slots() const override { return true; }
  Reply acquire_slot(const std::string& mutex, const std::string& contender, int slots,
                     int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    if (slots == 1) return acquire(mutex, contender, ttl_ms, transition_ms, timeout_ms);
    Reply r = run_slot(m_sql.acquire_slot(),
                       {mutex, contender, std::to_string(ttl_ms), std::to_string(transition_ms),
                        m_quarantine, m_holder, std::to_string(slots)},
                       timeout_ms);
    if (r.changed) m_wakeups.left_queue(mutex, contender);
    return r;
  }

  Reply get(const std::string& mutex, int64_t timeout_ms) override {
    return run(m_sql.get(), {mutex, m_quarantine}, timeout_ms);
  }

  Reply acquire_once(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                     int64_t transition_ms, const core::OncePer& once, const std::string& label,
                     const std::string& host, int64_t timeout_ms) override {
    return run(m_sql.acquire_once(),
               {mutex, contender, std::to_string(ttl_ms), std::to_string(transition_ms),
                m_quarantine, std::to_string(once.period_ms), std::to_string(once.offset_ms),
                once.retry_failed ? "t" : "f", label, host, m_holder, std::to_string(once.window)},
               timeout_ms);
  }

  Reply release_once(const std::string& mutex, const std::string& contender, uint64_t token,
                     int exit_code, int64_t timeout_ms) override {
    return left_queue(run(m_sql.release_once(),
                          {mutex, contender, std::to_string(token), pg::channel(m_uri, mutex),
                           std::to_string(exit_code)},
                          timeout_ms),
                      mutex, contender);
  }

  Reply done_record(const std::string& mutex, int64_t timeout_ms) override {
    return run(m_sql.done_record(), {mutex, m_quarantine}, timeout_ms);
  }

  // schedule's record of the last run (the column last_run_at).
  Reply guard_mark(const std::string& mutex, const std::string& contender, uint64_t token,
                   int64_t ttl_ms, int64_t transition_ms, bool record,
                   int64_t timeout_ms) override {
    return run(m_sql.guard_mark(),
               {mutex, contender, std::to_string(token), std::to_string(ttl_ms),
                std::to_string(transition_ms), "guard", record ? "t" : "f"},
               timeout_ms);
  }

  Listing inspect(const std::string& mutex, int64_t timeout_ms) override;
  History history(const std::string& mutex, int64_t since_ms, int64_t timeout_ms) override;

  // Written by the statements themselves (status_sql.hpp): no I/O here.
  void set_holder(const Holder& h) override {
    m_holder = encode_holder(h);
    m_wakeups.set_holder(m_holder);
  }
  void set_exit_code(int code) override { m_exit_code = std::to_string(code); }

  Reply record_lost(const std::string& mutex, const std::string& contender, const LostLease& lost,
                    int64_t timeout_ms) override {
    return run(m_sql.record_lost(),
               {mutex, contender, std::to_string(lost.token), m_holder,
                lost.exit_code ? std::to_string(*lost.exit_code) : "", std::to_string(lost.held_ms),
                lost.reason, lost.by},
               timeout_ms);
  }

  Reply record_skipped(const std::string& mutex, const std::string& contender, const SkippedRun& s,
                       int64_t timeout_ms) override {
    // SIMBA_HISTORY_LIMIT=0: nothing to write (no counter moves): no call.
    if (history_limit() <= 0) {
      Reply nothing;
      nothing.status = Reply::Status::ok;
      return nothing;
    }
    return run(m_sql.record_skipped(),
               {mutex, contender, std::to_string(s.token), m_holder,
                s.exit_code ? std::to_string(*s.exit_code) : "",
                s.held_ms ? std::to_string(*s.held_ms) : "", s.reason, s.by,
                std::to_string(s.waited_ms)},
               timeout_ms);
  }

  // simba doctor: on connections of its own (doctor.hpp).
  void diagnose(Diagnosis& found, const DiagnoseOptions& options) override {
    pg::diagnose(m_uri, found, options);
  }

  int64_t call_timeout_ms() const override { return m_uri.timeout_ms; }
  std::string describe() const override { return m_describe; }

  // Without LISTEN (listen=off): the waiters wake on their timers.
  Wakeups& wakeups(const std::string& mutex, const std::string& contender) override {
    if (!m_uri.listen) return no_wakeups();
    m_wakeups.target(mutex, contender);
    return m_wakeups;
  }

  // The LISTEN connection stays: its queue entry is left by the destructor.
  void leave() override { m_conn.leave(); }

private:
  static std::string describe_uri(const PostgresUri& u) {
    return u.shown + (u.shown.find('?') == std::string::npos ? "?" : "&") +
           "schema=" + uri_parts::percent_encode(u.schema) + "&prefix=" + u.prefix +
           (u.quarantine ? "" : "&quarantine=off") + (u.listen ? "" : "&listen=off");
  }

  Reply renew(const std::string& mutex, const std::string& contender, uint64_t token,
              int64_t ttl_ms, int64_t transition_ms, const char* mode, int64_t timeout_ms) {
    std::vector<std::string> params{mutex,
                                    contender,
                                    std::to_string(token),
                                    std::to_string(ttl_ms),
                                    std::to_string(transition_ms),
                                    mode};
    if (is_slot_row(mutex)) return run_slot(m_sql.guard_slot(), params, timeout_ms);
    return run(m_sql.guard(), params, timeout_ms);
  }

  // A release (k_leave_queue) that was answered took the releaser's place
  // out of the queue in its own transaction: the wake-ups are told (no
  // I/O), so that the end of the process sends no DELETE of it again.
  Reply left_queue(Reply r, const std::string& mutex, const std::string& contender) {
    if (r.ok()) m_wakeups.left_queue(mutex, contender);
    return r;
  }

  std::optional<QueuePlace> read_place(const std::string& mutex, const std::string& contender);
  Reply run(const std::string& sql, const std::vector<std::string>& params, int64_t timeout_ms,
            bool* retry = nullptr);
  Reply run_slot(const std::string& sql, const std::vector<std::string>& params,
                 int64_t timeout_ms);
  Result call(const std::string& sql, const std::vector<std::string>& params, int64_t timeout_ms);
  Result send(const std::string& sql, const std::vector<std::string>& params, int64_t deadline);
  std::string ensure_tables(const std::string& state, int64_t deadline);
  std::string connect(int64_t deadline);
  std::string create_tables(int64_t deadline);
  std::string may_not_create(const std::string& missing, int64_t deadline);
  std::string scrub(std::string msg) const;
  std::string failure(const Result& r) const;

  PostgresUri m_uri;
  pg::Statements m_sql;
  std::string m_describe;
  std::string m_quarantine; // the statements' boolean parameter
  pg::Connection m_conn;
  pg::QueueListenWakeups m_wakeups; // reads m_uri and m_sql
  int64_t m_budget_ms = 0;          // of the current call, for messages
  std::string m_holder;             // set_holder(), encoded; "" none
  std::string m_exit_code;          // set_exit_code(); "" unknown
  Access m_access = Access::use;    // open()'s
  bool m_tables_checked = false;    // call() made them, or tried to
  bool m_answered = false;          // a statement succeeded
};

std::string PostgresBackend::scrub(std::string msg) const {
  for (const std::string& secret : m_uri.secrets) {
    if (secret.empty()) continue;
    for (size_t at = msg.find(secret); at != std::string::npos; at = msg.find(secret, at + 3))
      msg.replace(at, secret.size(), "***");
  }
  return msg;
}

std::string PostgresBackend::connect(int64_t deadline) {
  std::string why = m_conn.connect(m_uri, deadline);
  if (why.empty()) return "";
  if (why == net::k_timed_out)
    return "no answer from PostgreSQL at " + m_uri.shown + " within " +
           core::format_duration(m_budget_ms);
  return scrub("cannot connect to PostgreSQL at " + m_uri.shown + ": " + why +
               pg::connect_hint(why));
}

std::string PostgresBackend::failure(const Result& r) const {
  if (r.error == net::k_timed_out)
    return "no answer from PostgreSQL at " + m_uri.shown + " within " +
           core::format_duration(m_budget_ms);
  return scrub("PostgreSQL at " + m_uri.shown + ": " + r.error);
}

// One statement: reconnects first when needed, and once more when a dead
// connection refused it before it left; sent again at once when the server
// chose it as a deadlock's victim (k_deadlock_tries).
Result PostgresBackend::send(const std::string& sql, const std::vector<std::string>& params,
                             int64_t deadline) {
  for (int attempt = 0;; ++attempt) {
    if (m_conn.stale()) m_conn.close();
    if (!m_conn.is_open()) {
      Result r;
      r.error = connect(deadline);
      if (!r.error.empty()) return r;
    }
    Result r = m_conn.query(sql, params, deadline);
    for (int tries = 1; !r.ok && r.sqlstate == "40P01" && tries < k_deadlock_tries &&
                        sys::boottime_ms() < deadline;
         ++tries)
      r = m_conn.query(sql, params, deadline);
    if (r.ok || r.sent || attempt > 0 || sys::boottime_ms() >= deadline) {
      if (!r.ok) r.error = failure(r);
      return r;
    }
  }
}

// No look for the tables before the first statement (a round trip and a
// cold catalog read on every run): the statement itself fails, applying
// nothing, when they or their columns are missing; then they are made (or
// brought up to date) as open() would, once per process, and the
// statement is sent again. Before any statement succeeded, a failure to
// make them is open()'s: UnavailableError (exit 69, no lease was taken).
Result PostgresBackend::call(const std::string& sql, const std::vector<std::string>& params,
                             int64_t timeout_ms) {
  m_budget_ms = std::max<int64_t>(1, std::min(timeout_ms, m_uri.timeout_ms));
  int64_t deadline = sys::boottime_ms() + m_budget_ms;
  Result r = send(sql, params, deadline);
  if (!r.ok && !m_tables_checked && (missing_tables(r.sqlstate) || missing_columns(r.sqlstate))) {
    m_tables_checked = true;
    std::string why = ensure_tables(r.sqlstate, deadline);
    if (!why.empty() && !m_answered) throw UnavailableError(why);
    if (why.empty())
      r = send(sql, params, deadline);
    else
      r.error = why;
  }
  if (r.ok) m_answered = true;
  return r;
}

// `retry`: a statement of slots_sql.hpp, whose answer has three columns
// more (the slot, the N that refused, whether to send it again).
Reply PostgresBackend::run(const std::string& sql, const std::vector<std::string>& params,
                           int64_t timeout_ms, bool* retry) {
  Result r = call(sql, params, timeout_ms);
  if (!r.ok) {
    // A refusal by the server (a SQLSTATE) applied nothing: one statement
    // is one transaction.
    // 42501 (insufficient_privilege): a GRANT is missing, which no retry
    // brings.
    bool maybe_applied = r.sent && r.sqlstate.empty();
    Reply::Status s = maybe_applied           ? Reply::Status::indeterminate
                      : r.sqlstate == "42501" ? Reply::Status::refused
                                              : Reply::Status::failed;
    return Reply::failure(s, r.error);
  }
  m_wakeups.server_answered();
  const size_t columns = retry ? 12 : 0;
  if (r.rows.size() != 1 || (r.rows[0].size() != 9 && r.rows[0].size() != 10 &&
                             r.rows[0].size() != 9 + k_done_columns && r.rows[0].size() != columns))
    return Reply::failure(Reply::Status::failed, "unexpected answer from PostgreSQL");
  const std::vector<std::string>& row = r.rows[0];
  Reply out;
  out.status = Reply::Status::ok;
  out.observed.now = number(row[0]);
  out.changed = row[1] == "t";
  out.observed.lease = read_lease(row, 2);
  show_quarantine(out.observed.lease, out.observed.now, number(row[8]));
  if (row.size() == 10 && !row[9].empty()) out.last_run_at = number(row[9]);
  if (row.size() == 9 + k_done_columns && !row[9].empty()) out.done = read_done(row, 9);
  if (row.size() == columns) {
    out.observed.lease.slot = static_cast<int>(number(row[9]));
    out.slots_recorded = static_cast<int>(number(row[10]));
    *retry = row[11] == "t";
  }
  return out;
}

// A statement of slots_sql.hpp, sent again while it answers that another
// writer of the mutex's slots committed after its snapshot (it wrote
// nothing): each try is one statement, and one more is needed only when
// two writers of one mutex met. Bounded by the call's budget.
Reply PostgresBackend::run_slot(const std::string& sql, const std::vector<std::string>& params,
                                int64_t timeout_ms) {
  const int64_t end = sys::boottime_ms() + std::max<int64_t>(1, timeout_ms);
  for (int tries = 1;; ++tries) {
    bool retry = false;
    Reply r = run(sql, params, std::max<int64_t>(1, end - sys::boottime_ms()), &retry);
    if (!r.ok() || !retry) return r;
    if (sys::boottime_ms() >= end || tries >= k_slot_tries)
      return Reply::failure(Reply::Status::failed,
                            "PostgreSQL at " + m_uri.shown + ": the slots of " +
                                std::string(core::mutex_of_row(params[0])) + " changed under " +
                                std::to_string(tries) + " tries; nothing was written");
  }
}

// status and history: one statement each, its rows read in rows.cpp.
Listing PostgresBackend::inspect(const std::string& mutex, int64_t timeout_ms) {
  Result r = call(m_sql.inspect(), {m_quarantine, mutex}, timeout_ms);
  if (!r.ok) {
    Listing failed;
    failed.holders_kept = failed.waiters_kept = true;
    failed.error = r.error;
    return failed;
  }
  return pg::read_listing(r.rows, mutex);
}

History PostgresBackend::history(const std::string& mutex, int64_t since_ms, int64_t timeout_ms) {
  Result r = call(m_sql.history(), {mutex, std::to_string(since_ms)}, timeout_ms);
  if (!r.ok) {
    History failed;
    failed.kept = true;
    failed.error = r.error;
    return failed;
  }
  return pg::read_history(r.rows);
}

// Asked only by a waiting notice: one statement on the main connection.
std::optional<QueuePlace> PostgresBackend::read_place(const std::string& mutex,
                                                      const std::string& contender) {
  Result r = call(m_sql.place(), {mutex, contender}, m_uri.timeout_ms);
  if (!r.ok) return std::nullopt;
  QueuePlace p;
  for (const std::vector<std::string>& row : r.rows) {
    ++p.length;
    if (!row.empty() && row[0] == "t" && p.position == 0) p.position = p.length;
  }
  if (p.position == 0) p.position = ++p.length; // not queued yet: it joins last
  return p;
}

// A schema that does not exist is created too: the statements say
// "relation does not exist" (42P01) for a table in a missing schema, the
// script's CREATE TABLE "schema does not exist" (3F000).
//
// Before each try, a look whether another first use made them meanwhile
// (what many simba started at once find): then the script is not run, for
// its ALTERs lock each table exclusively even with nothing to add, and a
// statement of another simba that held one table and waited for the next
// deadlocked with them (CI: 24 first uses at once, one exited 69).
std::string PostgresBackend::create_tables(int64_t deadline) {
  const std::string& schema = m_sql.create_schema();
  bool with_schema = false;
  std::string missing; // what the probe found missing, for the message
  for (int attempt = 0;; ++attempt) {
    if (!m_conn.is_open()) return failure(Result{});
    Result probe = m_conn.query(m_sql.probe_schema(), {}, deadline);
    if (probe.ok) return "";
    if (attempt == 0)
      missing = pg::missing_parts(m_conn, m_uri, deadline, pg::primary_message(probe.error));
    std::string sql = (with_schema ? schema : "") + m_sql.schema();
    Result r = m_conn.is_open() ? m_conn.script(sql, deadline) : Result{};
    if (r.ok) return "";
    bool retry = lost_create_race(r.sqlstate) || (r.sqlstate == "3F000" && !with_schema);
    if (r.sqlstate == "3F000") with_schema = true;
    if (attempt + 1 < k_schema_tries && retry && m_conn.is_open()) continue;
    if (r.sqlstate == "42501") return may_not_create(missing, deadline);
    return failure(r);
  }
}

// The role may not make what `missing` names: the SQL an administrator
// runs, with the grants of this role (setup_sql.hpp).
std::string PostgresBackend::may_not_create(const std::string& missing, int64_t deadline) {
  std::string role = pg::current_role(m_conn, deadline);
  return "the PostgreSQL role may not create simba's tables in schema " +
         pg::quote_identifier(m_uri.schema) + " at " + m_uri.shown +
         (missing.empty() ? "" : " (missing: " + missing + ")") +
         "; have an administrator run (man simba, POSTGRESQL): " +
         pg::setup_sql(m_uri.schema, m_uri.prefix, role.empty() ? "simba" : role);
}

// The tables are missing (`state`, the SQLSTATE of the statement that
// found it): made, or brought up to date. "" or why not.
std::string PostgresBackend::ensure_tables(const std::string& state, int64_t deadline) {
  // Tables without the columns of status are brought up to date even by
  // status or release: nothing new is created that a typo could name.
  bool tables_missing = missing_tables(state);
  if (tables_missing && m_access == Access::inspect) {
    // Only the history is missing: tables to bring up to date.
    Result older = m_conn.is_open() ? m_conn.query(m_sql.probe_leases(), {}, deadline) : Result{};
    if (!older.ok && !older.sqlstate.empty() && !missing_tables(older.sqlstate))
      return failure(older);
    tables_missing = !older.ok;
  }
  if (tables_missing && m_access == Access::inspect)
    return "PostgreSQL at " + m_uri.shown + " has no simba tables (" + m_uri.prefix +
           "leases in schema " + pg::quote_identifier(m_uri.schema) +
           "): nothing was locked there yet";
  return create_tables(deadline);
}

// Connects: a server that cannot be reached is known before anything else
// is done. The tables are looked for by the first statement (call()).
void PostgresBackend::open(Access access) {
  m_access = access;
  m_budget_ms = m_uri.timeout_ms;
  std::string why = connect(sys::boottime_ms() + m_budget_ms);
  if (!why.empty()) throw UnavailableError(why);
}

} // namespace

std::unique_ptr<Backend> open_postgres(PostgresUri uri, Access access) {
  auto backend = std::make_unique<PostgresBackend>(std::move(uri));
  backend->open(access);
  return backend;
}

} // namespace simba::backend
