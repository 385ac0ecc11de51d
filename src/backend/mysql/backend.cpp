// The MySQL Backend: each operation one query (statements.cpp) on one
// connection, its answer read into a Reply.
// Over 500 lines: one class, whose every operation is a few lines of the
// same shape, and the readers of its answers; the SQL, the connection and
// the wake-ups live apart.
#include "backend/mysql/mysql.hpp"

#include "backend/history.hpp"
#include "backend/holder.hpp"
#include "backend/mysql/connection.hpp"
#include "backend/mysql/doctor.hpp"
#include "backend/mysql/option_file.hpp"
#include "backend/mysql/packets.hpp"
#include "backend/mysql/statements.hpp"
#include "backend/mysql/wakeups.hpp"
#include "backend/net/deadline_io.hpp"
#include "backend/slot_listing.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/slots.hpp"
#include "sys/clock.hpp"

#include <algorithm>
#include <cstdlib>

namespace simba::backend {
namespace {

using mysql::Call;
using mysql::Query;
using mysql::Result;
using mysql::Row;
using mysql::wire::hex_literal;

// Error codes: a table is missing (ER_NO_SUCH_TABLE); a deadlock victim or
// a lock wait that ran out (the transaction, or its statement, was rolled
// back: nothing applied), sent again within the call's budget; a privilege
// is missing (no retry brings it).
constexpr int k_no_such_table = 1146;
constexpr int k_unknown_column = 1054; // a table made by an older simba
bool lost_lock(int code) { return code == 1213 || code == 1205; }
bool denied(int code) {
  return code == 1142 || code == 1143 || code == 1044 || code == 1045 || code == 1227 ||
         code == 1370;
}
constexpr int k_lock_tries = 4;

int64_t number(const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); }

// The 8 columns of an answer (statements.hpp) from `at`.
core::Lease read_lease(const Row& row, size_t at) {
  core::Lease l;
  l.owner_id = row[at];
  l.acquired_at = number(row[at + 1]);
  l.ttl_at = number(row[at + 2]);
  l.transition_at = number(row[at + 3]);
  l.fencing_token = static_cast<uint64_t>(number(row[at + 4]));
  l.holding = row[at + 5] == "1";
  return l;
}

// The done record's 10 columns (statements.hpp) from `at`.
constexpr size_t k_done_columns = 10;
core::DoneRecord read_done(const Row& row, size_t at) {
  core::DoneRecord d;
  d.window_start = number(row[at]);
  d.label = row[at + 1];
  d.host = row[at + 2];
  d.token = static_cast<uint64_t>(number(row[at + 3]));
  d.started_at = number(row[at + 4]);
  d.finished = row[at + 5] == "1";
  d.exit_code = static_cast<int>(number(row[at + 6]));
  d.finished_at = number(row[at + 7]);
  d.period_ms = number(row[at + 8]);
  d.offset_ms = number(row[at + 9]);
  return d;
}

// A slot's row ("m#k", core/slots.hpp) and its number.
bool is_slot_row(const std::string& name) { return name.find('#') != std::string::npos; }
int slot_of(const std::string& row) {
  return static_cast<int>(std::strtol(row.c_str() + row.find('#') + 1, nullptr, 10));
}

// A quarantine in force (till > now) shows on a free lease: no owner, free
// at its end (as the PostgreSQL backend shows it: postgres/rows.cpp).
void show_quarantine(core::Lease& l, int64_t now, int64_t till) {
  if (till <= now || !l.free_at(now)) return;
  l.owner_id.clear();
  l.ttl_at = now;
  l.transition_at = std::max(l.transition_at, till);
  l.quarantine = true;
}

std::string or_null(const std::string& s) { return s.empty() ? "NULL" : hex_literal(s); }

class MysqlBackend final : public Backend {
public:
  explicit MysqlBackend(MysqlUri uri)
      : m_uri(std::move(uri)), m_sql(m_uri.prefix),
        m_wakeups(m_uri, m_sql, [this](const std::string& mutex, const std::string& contender) {
          return read_place(mutex, contender);
        }) {}

  void open(Access access);

  Reply acquire(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                int64_t transition_ms, int64_t timeout_ms) override {
    return run(m_sql.acquire(call(mutex, contender, 0, ttl_ms, transition_ms)), timeout_ms);
  }
  Reply guard(const std::string& mutex, const std::string& contender, uint64_t token,
              int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    return write(mutex, m_sql.guard(call(mutex, contender, token, ttl_ms, transition_ms), "guard"),
                 timeout_ms);
  }
  Reply begin_step(const std::string& mutex, const std::string& contender, uint64_t token,
                   int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    return write(mutex, m_sql.guard(call(mutex, contender, token, ttl_ms, transition_ms), "step"),
                 timeout_ms);
  }
  Reply hold(const std::string& mutex, const std::string& contender, uint64_t token,
             int64_t hold_ms, int64_t timeout_ms) override {
    return write(mutex, m_sql.guard(call(mutex, contender, token, hold_ms, 0), "hold"),
                 timeout_ms);
  }
  Reply extend(const std::string& mutex, const std::string& contender, uint64_t token,
               int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    return write(mutex, m_sql.guard(call(mutex, contender, token, ttl_ms, transition_ms), "keep"),
                 timeout_ms);
  }
  Reply guard_mark(const std::string& mutex, const std::string& contender, uint64_t token,
                   int64_t ttl_ms, int64_t transition_ms, bool record,
                   int64_t timeout_ms) override {
    return write(mutex,
                 m_sql.guard_mark(call(mutex, contender, token, ttl_ms, transition_ms), record),
                 timeout_ms);
  }
  Reply release(const std::string& mutex, const std::string& contender, uint64_t token,
                int64_t timeout_ms) override {
    Reply r =
        write(mutex, m_sql.release(call(mutex, contender, token), m_exit_code), timeout_ms);
    return leaving(mutex, std::move(r));
  }
  Reply end_revoked(const std::string& mutex, const std::string& contender, uint64_t token,
                    int64_t timeout_ms) override {
    if (is_slot_row(mutex))
      return Reply::failure(Reply::Status::failed, "a slot's revoked lease runs out");
    return leaving(mutex, run(m_sql.end_revoked(call(mutex, contender, token)), timeout_ms));
  }
  Reply force_release(const std::string& mutex, uint64_t token, int64_t timeout_ms) override {
    return leaving(mutex,
                   write(mutex, m_sql.force_release(call(mutex, "", token), false), timeout_ms));
  }
  Reply release_lease(const std::string& mutex, uint64_t token, int64_t timeout_ms) override {
    return leaving(mutex,
                   write(mutex, m_sql.force_release(call(mutex, "", token), true), timeout_ms));
  }
  // --slots N (slots_sql.cpp); N = 1 is the plain acquire.
  bool has_slots() const override { return true; }
  Reply acquire_slot(const std::string& mutex, const std::string& contender, int slots,
                     int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    if (slots == 1) return acquire(mutex, contender, ttl_ms, transition_ms, timeout_ms);
    return run(m_sql.acquire_slot(call(mutex, contender, 0, ttl_ms, transition_ms), mutex, slots),
               timeout_ms);
  }

  Reply get(const std::string& mutex, int64_t timeout_ms) override {
    return run(m_sql.get(hex_literal(mutex)), timeout_ms);
  }

  Reply acquire_once(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                     int64_t transition_ms, const core::OncePer& once, const std::string& label,
                     const std::string& host, int64_t timeout_ms) override {
    return run(m_sql.acquire_once(call(mutex, contender, 0, ttl_ms, transition_ms), once, label,
                                  host),
               timeout_ms);
  }
  Reply release_once(const std::string& mutex, const std::string& contender, uint64_t token,
                     int exit_code, int64_t timeout_ms) override {
    return leaving(mutex,
                   run(m_sql.release_once(call(mutex, contender, token), exit_code), timeout_ms));
  }
  Reply done_record(const std::string& mutex, int64_t timeout_ms) override {
    return run(m_sql.done_record(hex_literal(mutex)), timeout_ms);
  }

  Listing inspect(const std::string& mutex, int64_t timeout_ms) override;
  History history(const std::string& mutex, int64_t since_ms, int64_t timeout_ms) override;

  void set_holder(const Holder& h) override {
    m_holder = encode_holder(h);
    m_wakeups.set_holder(m_holder, h.gives_up_at);
  }
  void set_exit_code(int code) override { m_exit_code = std::to_string(code); }

  Reply record_lost(const std::string& mutex, const std::string& contender, const LostLease& lost,
                    int64_t timeout_ms) override {
    Reply r = run(m_sql.record_lost(call(mutex, contender, lost.token),
                                    lost.exit_code ? std::to_string(*lost.exit_code) : "NULL",
                                    lost.held_ms, hex_literal(lost.reason), or_null(lost.by)),
                  timeout_ms);
    r.changed = false;
    return r;
  }
  Reply record_skipped(const std::string& mutex, const std::string& contender, const SkippedRun& s,
                       int64_t timeout_ms) override {
    if (history_limit() <= 0) {
      Reply nothing;
      nothing.status = Reply::Status::ok;
      return nothing;
    }
    Reply r = run(m_sql.record_skipped(call(mutex, contender, s.token),
                                       s.exit_code ? std::to_string(*s.exit_code) : "NULL",
                                       s.held_ms ? std::to_string(*s.held_ms) : "NULL",
                                       hex_literal(s.reason), or_null(s.by), s.waited_ms),
                  timeout_ms);
    r.changed = false;
    return r;
  }

  // simba doctor: on a connection of its own (doctor.hpp).
  void diagnose(Diagnosis& found, const DiagnoseOptions& options) override {
    mysql::diagnose(m_uri, found, options);
  }

  int64_t call_timeout_ms() const override { return m_uri.timeout_ms; }
  std::string describe() const override {
    // The URI as given, with the prefix it names or the default one.
    const bool named = m_uri.shown.find("prefix=") != std::string::npos;
    return m_uri.shown +
           (named ? "" : (m_uri.shown.find('?') == std::string::npos ? "?" : "&") +
                             std::string("prefix=") + m_uri.prefix);
  }
  // The hint channel of named locks (wakeups.hpp).
  Wakeups& wakeups(const std::string& mutex, const std::string& contender) override {
    m_wakeups.target(mutex, contender);
    return m_wakeups;
  }

  void leave() override {
    m_conn.leave();
    m_wakeups.leave();
  }

private:
  Call call(const std::string& mutex, const std::string& contender, uint64_t token,
            int64_t ttl_ms = 0, int64_t transition_ms = 0) const {
    Call c;
    c.mutex = hex_literal(mutex);
    c.contender = hex_literal(contender);
    c.holder = or_null(m_holder);
    c.token = token;
    c.ttl_ms = ttl_ms;
    c.transition_ms = transition_ms;
    c.quarantine = m_uri.quarantine;
    // A slot's row: its mutex's hint lock, which no slot's acquisition
    // takes (statements.cpp: taking_hint is the plain acquire's), so that
    // its releases pass on the lock a waiter holds (wake_hint_holder).
    c.hint = hex_literal(mysql::hint_name(m_uri, mutex));
    c.queue = hex_literal(core::mutex_of_row(mutex));
    return c;
  }

  // After every release path: the hint lock goes to the next waiter
  // (wakeups.hpp), whichever session held it.
  Reply leaving(const std::string& mutex, Reply r) {
    wake_hint_holder();
    m_wakeups.release_hint(mutex);
    return r;
  }
  void wake_hint_holder();
  std::optional<QueuePlace> read_place(const std::string& mutex, const std::string& contender);

  // A write of `mutex`: a slot's row keeps its marker (slots_sql.cpp).
  Reply write(const std::string& mutex, Query q, int64_t timeout_ms) {
    if (is_slot_row(mutex)) {
      Reply r = run(m_sql.on_slot_row(std::move(q), mutex), timeout_ms);
      if (r.ok()) r.observed.lease.slot = slot_of(mutex);
      return r;
    }
    return run(q, timeout_ms);
  }
  // The server gives up a row lock it waits for within the call's budget
  // (whole seconds, at least 1: innodb_lock_wait_timeout), as the client
  // does: a statement the client gave up on is never applied late (a
  // lost event after the next holder's). Set by the query's own first SET.
  std::string bounded(const std::string& sql) const {
    static const std::string first = "SET time_zone = '+00:00'";
    if (sql.rfind(first, 0) != 0) return sql;
    return first + ", innodb_lock_wait_timeout = " + std::to_string((m_budget_ms + 999) / 1000) +
           sql.substr(first.size());
  }
  Reply run(const Query& q, int64_t timeout_ms);
  std::string m_hint_holder; // the last run()'s (Query::hint_holder), "" none
  Result call_sql(const std::string& sql, int64_t timeout_ms);
  Result send(const std::string& sql, int64_t deadline);
  std::string connect(int64_t deadline);
  std::string ensure_tables(int64_t deadline);
  std::string scrub(std::string msg) const;
  std::string failure(const Result& r) const;

  MysqlUri m_uri;
  mysql::Statements m_sql;
  mysql::Connection m_conn;
  mysql::HintWakeups m_wakeups; // reads m_uri
  int64_t m_budget_ms = 0;
  std::string m_holder;
  std::string m_exit_code = "NULL";
  Access m_access = Access::use;
  bool m_tables_checked = false;
  bool m_upgraded = false; // Statements::upgrade() sent once
  bool m_answered = false;
};

std::string MysqlBackend::scrub(std::string msg) const {
  for (const std::string& secret : m_uri.secrets) {
    if (secret.empty()) continue;
    for (size_t at = msg.find(secret); at != std::string::npos; at = msg.find(secret, at + 3))
      msg.replace(at, secret.size(), "***");
  }
  return msg;
}

std::string MysqlBackend::connect(int64_t deadline) {
  std::string why = m_conn.connect(m_uri, deadline);
  if (why.empty()) return "";
  if (why == net::k_timed_out)
    return "no answer from MySQL at " + m_uri.shown + " within " +
           core::format_duration(m_budget_ms);
  // A password refused: where it came from, or why no file gave it.
  if (m_conn.password_refused() && !m_uri.password_note.empty())
    why += " (" + m_uri.password_note + ")";
  return scrub("cannot connect to MySQL at " + m_uri.shown + ": " + why);
}

std::string MysqlBackend::failure(const Result& r) const {
  if (r.error == net::k_timed_out)
    return "no answer from MySQL at " + m_uri.shown + " within " +
           core::format_duration(m_budget_ms);
  return scrub("MySQL at " + m_uri.shown + ": " + r.error);
}

// One query: reconnects first when needed, and once more when a dead
// connection refused it before it left. A refused statement left its
// transaction open: ROLLBACK (or, failing that, the connection goes, and
// the server rolls back). A deadlock's victim is sent again at once.
Result MysqlBackend::send(const std::string& sql, int64_t deadline) {
  for (int attempt = 0;; ++attempt) {
    if (m_conn.stale()) m_conn.close();
    if (!m_conn.is_open()) {
      Result r;
      r.error = connect(deadline);
      if (!r.error.empty()) return r;
    }
    Result r = m_conn.query(sql, deadline);
    for (int tries = 1;; ++tries) {
      if (!r.ok && r.code != 0 && !m_conn.query("ROLLBACK", deadline).ok) m_conn.close();
      if (r.ok || !lost_lock(r.code) || tries >= k_lock_tries || sys::boottime_ms() >= deadline ||
          !m_conn.is_open())
        break;
      r = m_conn.query(sql, deadline);
    }
    if (r.ok || r.sent || attempt > 0 || sys::boottime_ms() >= deadline) {
      if (!r.ok) r.error = failure(r);
      return r;
    }
  }
}

// No look for the tables before the first query: the query itself fails,
// applying nothing, when they are missing; then they are made, once per
// process, and the query is sent again (and a table of an older simba
// that lacks a column gets it, once per process). Before any query succeeded, a
// failure to make them is open()'s: UnavailableError (exit 69).
Result MysqlBackend::call_sql(const std::string& sql, int64_t timeout_ms) {
  m_budget_ms = std::max<int64_t>(1, std::min(timeout_ms, m_uri.timeout_ms));
  int64_t deadline = sys::boottime_ms() + m_budget_ms;
  Result r = send(bounded(sql), deadline);
  if (!r.ok && r.code == k_no_such_table && !m_tables_checked) {
    m_tables_checked = true;
    std::string why = ensure_tables(deadline);
    if (!why.empty() && !m_answered) throw UnavailableError(why);
    if (why.empty())
      r = send(bounded(sql), deadline);
    else
      r.error = why;
  }
  if (!r.ok && r.code == k_unknown_column && !m_upgraded) {
    m_upgraded = true;
    if (send(m_sql.upgrade(), deadline).ok) r = send(bounded(sql), deadline);
  }
  if (r.ok) m_answered = true;
  return r;
}

Reply MysqlBackend::run(const Query& q, int64_t timeout_ms) {
  m_hint_holder.clear();
  Result r = call_sql(q.sql, timeout_ms);
  if (r.ok && q.hint_holder != 0 && r.sets.size() > q.hint_holder &&
      r.sets[q.hint_holder].rows.size() == 1 && r.sets[q.hint_holder].rows[0].size() == 1)
    m_hint_holder = r.sets[q.hint_holder].rows[0][0];
  if (!r.ok) {
    // A refusal by the server (an error code) applied nothing: the
    // transaction never reached its COMMIT.
    Reply::Status s = r.sent && r.code == 0 ? Reply::Status::indeterminate
                      : denied(r.code)      ? Reply::Status::refused
                                            : Reply::Status::failed;
    return Reply::failure(s, r.error);
  }
  if (r.sets.size() <= q.answer || r.sets[q.answer].rows.size() != 1 ||
      r.sets[q.answer].rows[0].size() < 9)
    return Reply::failure(Reply::Status::failed, "unexpected answer from MySQL");
  Row row = r.sets[q.answer].rows[0];
  const int64_t till = number(row.back()); // statements.hpp: the last column
  row.pop_back();
  Reply out;
  out.status = Reply::Status::ok;
  out.observed.now = number(row[0]);
  out.changed = row[1] == "1";
  out.observed.lease = read_lease(row, 2);
  show_quarantine(out.observed.lease, out.observed.now, till);
  if (row.size() == 9 && !row[8].empty()) out.last_run_at = number(row[8]);
  if (row.size() == 8 + k_done_columns && !row[8].empty()) out.done = read_done(row, 8);
  if (row.size() == 10) {
    out.observed.lease.slot = static_cast<int>(number(row[8]));
    out.slots_recorded = static_cast<int>(number(row[9]));
  }
  return out;
}

// A release freed the mutex while a waiter's hint connection held its
// hint lock (it found the mutex taken and waits for its timer: after
// `simba acquire` exited, a release --force or --lease from this
// process): that session ends (KILL CONNECTION), the server lets the lock
// go to the next waiter, which looks, and the waiter whose connection
// ended looks too (wakeups.cpp). The session of this process's own
// waiting is not ended: release_hint passes its lock on. A hint only: a
// KILL refused (a session of another MySQL user, without CONNECTION
// ADMIN) or late leaves the waiters to their timers.
void MysqlBackend::wake_hint_holder() {
  const std::string id = std::move(m_hint_holder);
  m_hint_holder.clear();
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) return;
  if (id == std::to_string(m_wakeups.session()) || !m_conn.is_open()) return;
  m_conn.query("KILL CONNECTION " + id, sys::boottime_ms() + m_uri.timeout_ms);
}

// Asked only by a waiting notice: one query on the main connection.
std::optional<QueuePlace> MysqlBackend::read_place(const std::string& mutex,
                                                   const std::string& contender) {
  Result r = call_sql(m_sql.queue(hex_literal(mutex), hex_literal(contender)), m_uri.timeout_ms);
  if (!r.ok || r.sets.size() != 1) return std::nullopt;
  QueuePlace p;
  for (const Row& row : r.sets[0].rows) {
    ++p.length;
    if (!row.empty() && row[0] == "1" && p.position == 0) p.position = p.length;
  }
  if (p.position == 0) p.position = ++p.length; // not queued yet: it joins last
  return p;
}

Listing MysqlBackend::inspect(const std::string& mutex, int64_t timeout_ms) {
  Query q = m_sql.inspect(mutex);
  Result r = call_sql(q.sql, timeout_ms);
  Listing out;
  out.holders_kept = out.waiters_kept = true;
  if (!r.ok || r.sets.size() <= q.answer || r.sets[q.answer - 1].rows.size() != 1) {
    out.error = r.ok ? "unexpected answer from MySQL" : r.error;
    return out;
  }
  const Row& clock = r.sets[q.answer - 1].rows[0];
  out.now = number(clock[0]);
  const int64_t till = clock.size() > 1 ? number(clock[1]) : 0;
  for (const Row& row : r.sets[q.answer].rows) {
    if (row.size() != 10) {
      out.error = "unexpected answer from MySQL";
      out.mutexes.clear();
      return out;
    }
    MutexLease m;
    m.mutex = row[0];
    m.lease = read_lease(row, 1);
    show_quarantine(m.lease, out.now, till);
    if (!row[7].empty()) m.holder = decode_holder(row[7]);
    m.acquisitions = number(row[8]);
    m.losses = number(row[9]);
    out.mutexes.push_back(std::move(m));
  }
  // The live waiters, in queue order, under their mutex (listed or not).
  if (r.sets.size() > q.answer + 1)
    for (const Row& row : r.sets[q.answer + 1].rows) {
      if (row.size() != 5) continue;
      auto at = std::find_if(out.mutexes.begin(), out.mutexes.end(),
                             [&](const MutexLease& m) { return m.mutex == row[0]; });
      if (at == out.mutexes.end()) {
        MutexLease free;
        free.mutex = row[0];
        free.acquisitions = free.losses = 0;
        show_quarantine(free.lease, out.now, till);
        at = out.mutexes.insert(std::upper_bound(out.mutexes.begin(), out.mutexes.end(), free,
                                                 [](const MutexLease& a, const MutexLease& b) {
                                                   return a.mutex < b.mutex;
                                                 }),
                                std::move(free));
      }
      std::optional<Holder> holder;
      if (!row[3].empty()) holder = decode_holder(row[3]);
      std::optional<int64_t> gives_up;
      if (!row[4].empty() && number(row[4]) > 0) gives_up = number(row[4]);
      at->waiters.push_back({row[1], number(row[2]), std::move(holder), gives_up});
    }
  group_slot_rows(out.mutexes);
  // A mutex never acquired has no row: free, as get() shows it.
  if (!mutex.empty() && out.mutexes.empty()) {
    MutexLease free;
    free.mutex = mutex;
    free.acquisitions = free.losses = 0;
    show_quarantine(free.lease, out.now, till);
    out.mutexes.push_back(std::move(free));
  }
  out.ok = true;
  return out;
}

History MysqlBackend::history(const std::string& mutex, int64_t since_ms, int64_t timeout_ms) {
  Query q = m_sql.history(mutex, since_ms);
  Result r = call_sql(q.sql, timeout_ms);
  History h;
  h.kept = true;
  if (!r.ok || r.sets.size() <= q.answer || r.sets[q.answer - 1].rows.size() != 1) {
    h.error = r.ok ? "unexpected answer from MySQL" : r.error;
    return h;
  }
  h.now = number(r.sets[q.answer - 1].rows[0][0]);
  auto optional = [](const std::string& v) {
    return v.empty() ? std::nullopt : std::optional<int64_t>(number(v));
  };
  for (const Row& row : r.sets[q.answer].rows) {
    if (row.size() != 11) {
      h.error = "unexpected answer from MySQL";
      h.events.clear();
      return h;
    }
    HistoryEvent e;
    e.mutex = std::string(core::mutex_of_row(row[0]));
    e.at = number(row[1]);
    e.event = row[2];
    e.owner_id = row[3];
    if (!row[4].empty()) e.holder = decode_holder(row[4]);
    e.token = static_cast<uint64_t>(number(row[5]));
    if (!row[6].empty()) e.exit_code = static_cast<int>(number(row[6]));
    e.held_ms = optional(row[7]);
    e.waited_ms = optional(row[8]);
    e.reason = row[9];
    e.by = row[10];
    h.events.push_back(std::move(e));
  }
  h.ok = true;
  return h;
}

// The tables are missing: made (CREATE TABLE IF NOT EXISTS: a concurrent
// first use does no harm), or why not: status and release create nothing,
// and a user without CREATE is told what to ask an administrator for.
std::string MysqlBackend::ensure_tables(int64_t deadline) {
  if (m_access == Access::inspect)
    return "MySQL at " + m_uri.shown + " has no simba tables (" + m_sql.leases() +
           " in database " + m_uri.database + "): nothing was locked there yet";
  // Many first uses at once: each looks before it makes them (another
  // may have), and tries again when it lost a race for a lock.
  Result r;
  for (int tries = 0; tries < 6 && sys::boottime_ms() < deadline; ++tries) {
    if (send(m_sql.probe(), deadline).ok) return "";
    r = send(m_sql.schema(), deadline);
    if (r.ok) return "";
    if (!lost_lock(r.code) && r.code != 1050 && r.code != 1062) break;
  }
  if (denied(r.code))
    return scrub("the MySQL user may not create simba's tables in database " + m_uri.database +
                 " at " + m_uri.shown + " (" + r.error.substr(r.error.find("ERROR")) +
                 "); have an administrator run the SQL of " + mysql::setup_command(m_uri) +
                 " with the mariadb or mysql client (docs/backends/mysql.md)");
  return r.error;
}

void MysqlBackend::open(Access access) {
  m_access = access;
  m_budget_ms = m_uri.timeout_ms;
  std::string why = connect(sys::boottime_ms() + m_budget_ms);
  if (!why.empty()) throw UnavailableError(why);
}

// A name between backticks (a database, a table, a user: MySQL quotes an
// account's user name as an identifier too), its backticks doubled: the
// URI's database and user are anybody's text, and an administrator runs
// what mysql_setup_sql prints. No backslash escapes in a quoted identifier,
// whatever the server's sql_mode.
std::string quoted(const std::string& name) {
  std::string out = "`";
  for (char c : name) out += c == '`' ? std::string("``") : std::string(1, c);
  return out + "`";
}

} // namespace

std::string mysql_setup_sql(const std::string& database, const std::string& prefix,
                            const std::string& user) {
  mysql::Statements s(prefix);
  std::string grants;
  for (const char* table : {"leases", "server", "run", "waiters", "history"})
    grants += "\nGRANT SELECT, INSERT, UPDATE, DELETE ON " + quoted(database) + "." +
              quoted(prefix + table) + " TO " + quoted(user) + "@'%';";
  return "USE " + quoted(database) + ";\n" + s.schema() + ";" + grants + "\n";
}

std::unique_ptr<Backend> open_mysql(MysqlUri uri, Access access) {
  if (std::string why = mysql::apply_option_file(uri); !why.empty())
    throw UnavailableError("MySQL at " + uri.shown + ": " + why);
  auto backend = std::make_unique<MysqlBackend>(std::move(uri));
  backend->open(access);
  return backend;
}

} // namespace simba::backend
