// The SQL of the PostgreSQL backend (statements.hpp). Over 500 lines: the
// statements share their fragments (the clock, the quarantine, the
// answer) and are kept side by side so that they stay alike; status and
// history have theirs in status_sql.cpp.
//
// Tables: "<prefix>leases", one row per mutex, never deleted (the row
// keeps the last fencing token when the lease ends: owner '' and
// transition_at at the end), and "<prefix>server", one row: the marker of
// the quarantine. The rules are those of redis/lua/ (keep them alike):
// DESIGN §2's owner-or-expired acquisition, owner and token compared
// together in every compare-and-set, tokens above the last one and never
// below the clock in microseconds. The server run and its quarantine:
// quarantine_sql.cpp.
#include "backend/postgres/statements.hpp"

#include "backend/history.hpp"
#include "backend/postgres/setup_sql.hpp"
#include "backend/postgres/slots_sql.hpp"
#include "backend/postgres/sql_parts.hpp"
#include "backend/postgres/status_sql.hpp"
#include "core/fifo.hpp"

#include <cstring>

namespace simba::backend::pg {
namespace {

// The done record of --once-per (core::DoneRecord): columns of the lease's
// row, once_window NULL when there is none; once_period and once_offset are
// the run's terms (NULL in a record of an older simba).
constexpr const char* k_once_fields =
    "once_window, once_label, once_host, once_token, once_started_at, once_finished, "
    "once_exit_code, once_finished_at, once_period, once_offset";
constexpr const char* k_once_columns =
    ",\n       r.once_window, r.once_label, r.once_host, r.once_token, r.once_started_at, "
    "r.once_finished, r.once_exit_code, r.once_finished_at, r.once_period, r.once_offset";

} // namespace

const char* const k_fields = "owner, acquired_at, ttl_at, transition_at, token, holding";

// The answer: the lease written by `up`, or else as it stands.
const char* const k_answer = R"(
SELECT n.ms, coalesce(r.changed, false), r.owner, r.acquired_at, r.ttl_at, r.transition_at,
       r.token, r.holding, {TILL}{EXTRA}
FROM n {Q} LEFT JOIN (
  SELECT {FIELDS}, changed FROM up
  UNION ALL
  SELECT {FIELDS}, false FROM {L}
  WHERE mutex = $1 AND NOT EXISTS (SELECT 1 FROM up)) r ON true)";

// `notify`: the channel NOTIFYed when `up` changed the lease (at commit:
// the waiters look once it is visible); "" none.
// `extra`: more columns (of r: then with `once`, the done record's).
// `fifo`: the statement has the CTE fg (fifo_gate): a refused contender
// is shown the row not free before the fallback ends and with no owner
// (core::fifo_refusal: it sleeps until then, and the owner whose lease ran
// out never sees it valid again), and the first live waiter is told to
// look, as a release would (its timer may fire later than ours).
std::string answer(bool with_quarantine, const std::string& notify, const char* extra, bool once,
                   bool fifo) {
  std::string a = k_answer;
  std::string fields = std::string(k_fields) + (once ? std::string(", ") + k_once_fields : "");
  std::string shown = fields;
  if (fifo) {
    shown.replace(shown.find("transition_at"), 13,
                  "greatest(transition_at, coalesce((SELECT until_ms FROM fg), 0))");
    shown.replace(shown.find("owner"), 5,
                  "CASE WHEN coalesce((SELECT until_ms FROM fg), 0) > 0 THEN '' ELSE owner END");
    shown.replace(shown.find("holding"), 7,
                  "holding AND coalesce((SELECT until_ms FROM fg), 0) = 0");
  }
  a.replace(a.find("{FIELDS}"), 8, fields);
  a.replace(a.find("{FIELDS}"), 8, shown);
  a.replace(a.find("{TILL}"), 6, with_quarantine ? "q.till" : "0");
  a.replace(a.find("{EXTRA}"), 7, extra);
  std::string joins = with_quarantine ? "CROSS JOIN q" : "";
  if (!notify.empty())
    joins += " CROSS JOIN (SELECT count(pg_notify(x.c, '')) FROM up CROSS JOIN (SELECT " + notify +
             " AS c) x WHERE x.c IS NOT NULL) w";
  if (fifo)
    joins += R"( CROSS JOIN (SELECT count(pg_notify(h.channel, '')) FROM fg CROSS JOIN LATERAL (
      SELECT z.channel FROM {Z} z WHERE z.mutex = $1 AND z.contender <> $2::text
        AND EXISTS (SELECT 1 FROM pg_stat_get_activity(z.pid))
      ORDER BY z.queued_at LIMIT 1) h WHERE fg.until_ms > 0) fw)";
  a.replace(a.find("{Q}"), 3, joins);
  return a;
}

// Any text but NUL is a valid quoted identifier (the URI parser refuses
// NUL and names longer than PostgreSQL keeps).
std::string quote_identifier(const std::string& identifier) {
  std::string out = "\"";
  for (char c : identifier) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

namespace {

// {L}, {S}, {Z}, {H} (the tables) in `sql` replaced by the quoted names.
std::string fill(std::string sql, const std::string& leases, const std::string& server,
                 const std::string& waiters, const std::string& history) {
  for (auto [token, name] : {std::pair<const char*, const std::string*>{"{L}", &leases},
                             {"{S}", &server},
                             {"{Z}", &waiters},
                             {"{H}", &history}}) {
    for (size_t at = sql.find(token); at != std::string::npos; at = sql.find(token, at))
      sql.replace(at, 3, *name);
  }
  return sql;
}

// "<schema>"."<prefix><table>"
std::string table_name(const std::string& schema, const std::string& prefix, const char* table) {
  return quote_identifier(schema) + "." + quote_identifier(prefix + table);
}

// acquire's and acquire_once's: the quarantine's marker row, written where
// it needs to be (after k_old_row) by every acquire, also of a mutex that
// is held: the quarantine starts at the first acquire that sees a new
// server run. Started only once the mutex was free, a holder that outlived
// the restart and died later was followed after its lease's end and then
// the whole quarantine (the chaos runs' failovers of 4-5 s for a lease of
// 2 s). Any moment after the restart is a safe start: every lease the
// lost run granted was renewed before it.
constexpr const char* k_mark = R"(,
mark AS (
  INSERT INTO {S} AS s (id, run, until_ms, longest)
  SELECT 1, q.run, q.till, q.longest FROM q
  WHERE $5::boolean AND q.lost
  ON CONFLICT (id) DO UPDATE SET run = excluded.run,
    until_ms = greatest(s.until_ms, excluded.until_ms), longest = excluded.longest),
)";

// FIFO (core/fifo.hpp), for acquire and acquire_once, after k_old_row
// (the row, locked) and q: fg.until_ms, the end of the fallback when the
// contender $2 is refused, else 0. Gated only just after the lease ended
// or the end of a quarantine (q.till passed), and only then is the queue
// read (CASE: in order), so a new row, or one free for longer, costs
// nothing more. Ended: ran out unreleased (an owner, or a revocation's:
// ttl_at before transition_at, which a release sets to its own time; its
// transition_at passed), or, with `released_too` (acquire), released: a
// release wakes the first live waiter only, and another waiter's timer
// that fired first took the mutex ahead of it (w1 w3 w2 in
// e2e-postgres/test_fifo_kill9 under load). release_once wakes every
// waiter (the window's run is over: each learns it at once). A live
// waiter queued before $2 (its session runs): refused. Only refuses
// (DESIGN §2): the statements grant nothing more for it.
std::string fifo_gate(bool released_too) {
  const std::string fallback = std::to_string(core::k_fifo_fallback_ms);
  const std::string ended =
      released_too ? "" : "(o.o_owner <> '' OR o.o_ttl_at < o.o_transition_at) AND ";
  return R"(,
fs AS (
  SELECT greatest(CASE WHEN )" +
         ended + R"(o.o_transition_at <= n.ms THEN o.o_transition_at
                       ELSE 0 END,
                  CASE WHEN q.till > 0 AND q.till <= n.ms THEN q.till ELSE 0 END) AS since
  FROM old o CROSS JOIN n CROSS JOIN q),
fg AS (
  SELECT CASE WHEN fs.since > 0 AND n.ms < fs.since + )" +
         fallback + R"( THEN
           CASE WHEN EXISTS (
             SELECT 1 FROM {Z} z
             WHERE z.mutex = $1 AND z.contender <> $2::text
               AND z.queued_at < coalesce((SELECT y.queued_at FROM {Z} y
                                           WHERE y.mutex = $1 AND y.contender = $2::text),
                                          9223372036854775807)
               AND EXISTS (SELECT 1 FROM pg_stat_get_activity(z.pid)))
             THEN fs.since + )" +
         fallback + R"( ELSE 0 END
         ELSE 0 END AS until_ms
  FROM fs CROSS JOIN n))";
}

// Whether the gate lets $2 in (an SQL boolean).
constexpr const char* k_fifo_open = "coalesce((SELECT until_ms FROM fg), 0) = 0";

// acquire: $1 mutex, $2 contender, $3 ttl_ms, $4 transition_ms, $5
// quarantine (boolean). One INSERT ... ON CONFLICT DO UPDATE ... WHERE:
// a new lease when the row is free (transition_at passed) and no
// quarantine is in force, a renewal for the valid owner (acquired_at and
// token stay), otherwise nothing. A new mutex during a quarantine gets a
// free row (no owner, token 0). The marker is written only where a new
// lease would be granted and it needs to be. $6: the holder (status_sql.hpp;
// "" none), written with a new lease, and its history events.
std::string acquire_sql(int64_t history) {
  return std::string("WITH ") + k_now + ",\n" +
         quarantine("$3::bigint + $4::bigint", "$5::boolean") + k_old_row + fifo_gate(true) + k_mark +
         R"(
up AS (
  INSERT INTO {L} AS l (mutex, owner, acquired_at, ttl_at, transition_at, token, holding,
                        holder, holder_token, history_seq, acquisitions, losses, lease_ms)
  SELECT $1, CASE WHEN n.ms < q.till THEN '' ELSE $2::text END, n.ms, n.ms + $3::bigint,
         CASE WHEN n.ms < q.till THEN 0 ELSE n.ms + $3::bigint + $4::bigint END,
         CASE WHEN n.ms < q.till THEN 0 ELSE n.us END, false, NULLIF($6::text, ''),
         CASE WHEN n.ms < q.till THEN 0 ELSE n.us END, CASE WHEN n.ms < q.till THEN 0 ELSE 1 END,
         CASE WHEN n.ms < q.till THEN 0 ELSE 1 END, 0, $3::bigint + $4::bigint
  FROM n CROSS JOIN q LEFT JOIN old ON true
  ON CONFLICT (mutex) DO UPDATE SET
    owner = $2::text, lease_ms = excluded.lease_ms,
    acquired_at = CASE WHEN l.transition_at > excluded.acquired_at THEN l.acquired_at
                       ELSE excluded.acquired_at END,
    token = CASE WHEN l.transition_at > excluded.acquired_at THEN l.token
                 ELSE greatest(l.token + 1, (SELECT us FROM n)) END,
    ttl_at = excluded.ttl_at,
    transition_at = excluded.ttl_at + $4::bigint,
    holding = false,
    holder = CASE WHEN l.transition_at > excluded.acquired_at THEN l.holder
                  ELSE excluded.holder END,
    holder_token = CASE WHEN l.transition_at > excluded.acquired_at THEN l.holder_token
                        ELSE greatest(l.token + 1, (SELECT us FROM n)) END,
    history_seq = CASE WHEN l.transition_at > excluded.acquired_at THEN l.history_seq
                       ELSE coalesce(l.history_seq, 0) + CASE WHEN l.owner <> '' THEN 2 ELSE 1 END
                  END,
    acquisitions = CASE WHEN l.transition_at > excluded.acquired_at THEN l.acquisitions
                        ELSE coalesce(l.acquisitions, 0) + 1 END,
    losses = CASE WHEN l.transition_at > excluded.acquired_at THEN l.losses
                  ELSE coalesce(l.losses, 0) + {EXPIRY_LOSS} END
  WHERE (l.transition_at > excluded.acquired_at AND l.owner = $2::text)
     OR (l.transition_at <= excluded.acquired_at AND excluded.acquired_at >= (SELECT till FROM q)
         AND )" +
         std::string(k_fifo_open) + R"()
  RETURNING l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
            l.owner = $2::text AS changed, coalesce(l.history_seq, 0) AS hseq))" +
         history_writes(acquired_events("$6"), history) + answer(true, "", "", false, true);
}

// The counters' expressions (status_sql.hpp) put in.
std::string with_counters(std::string sql) {
  for (size_t at = sql.find("{EXPIRY_LOSS}"); at != std::string::npos;
       at = sql.find("{EXPIRY_LOSS}", at))
    sql.replace(at, std::strlen("{EXPIRY_LOSS}"), k_expiry_loss);
  return sql;
}

// acquire_once: acquire's $1..$5, then $6 period_ms, $7 offset_ms, $8
// retry_failed (boolean), $9 label, $10 host, ($11 below), $12 the
// contender's window (core::OncePer::window; 0: the one holding now: w).
// acquire's rule, but a new lease only when that window may run (a record
// of an older window or none: open; of a later one: never; core::judge_window
// and core::may_run, mirrored: keep them alike, as redis/lua/acquire_once.lua),
// writing the record of its run (unfinished, that window) in the same row; a
// lease of ours without a record of its own (a plain acquire's) is judged
// too, and ended if the window may not run.
//
// The terms of k_acquire_once, spelled out: MINE, we are the valid owner;
// OWNREC, the lease has a record of its own; DIFFER, core::terms_differ
// (the record's run had another --once-per or --offset and its window
// lasts: simba then exits 64); MAY, not DIFFER and core::may_run for the
// window W (an unfinished record of it counts as failed, as in Redis); B, a
// lease of ours without its record and the window may run: the record
// starts; C, the same but it may not: the lease ends now; D, free, it may
// run, no quarantine: a new lease and its record.
std::string once_terms(std::string sql) {
  const std::pair<const char*, const char*> parts[] = {
      {"{NOW}", "excluded.acquired_at"},
      {"{W}", "(SELECT start FROM w)"},
      {"{MINE}", "(l.transition_at > excluded.acquired_at AND l.owner = $2::text)"},
      {"{OWNREC}", "(l.once_window IS NOT NULL AND l.once_token = l.token)"},
      {"{DIFFER}", "coalesce(l.once_period > 0 AND (l.once_period <> $6::bigint OR "
                   "l.once_offset <> $7::bigint) AND {NOW} < l.once_window + l.once_period, "
                   "false)"},
      {"{MAY}", "(NOT {DIFFER} AND (l.once_window IS NULL OR l.once_window < {W} OR "
                "(l.once_window = {W} AND $8::boolean AND "
                "NOT coalesce(l.once_finished AND l.once_exit_code = 0, false))))"},
      {"{TOKEN}", "greatest(l.token + 1, (SELECT us FROM n))"},
      {"{B}", "({MINE} AND NOT {OWNREC} AND {MAY})"},
      {"{C}", "({MINE} AND NOT {OWNREC} AND NOT {MAY})"},
      {"{D}", "(l.transition_at <= excluded.acquired_at AND {MAY} AND "
              "excluded.acquired_at >= (SELECT till FROM q) AND {FIFO})"},
      {"{FIFO}", k_fifo_open},
      {"{START}", "({B} OR {D})"}};
  // Terms hold terms ({MAY} holds {DIFFER}, which holds {NOW}): replace
  // until none is left, however deep they nest.
  for (bool replaced = true; replaced;) {
    replaced = false;
    for (auto [token, text] : parts)
      for (size_t at = sql.find(token); at != std::string::npos; at = sql.find(token, at)) {
        sql.replace(at, std::strlen(token), text);
        replaced = true;
      }
  }
  return sql;
}

constexpr const char* k_acquire_once = R"(
w AS (SELECT CASE WHEN $12::bigint <> 0 THEN $12::bigint ELSE {WINDOW} END AS start FROM n),
up AS (
  INSERT INTO {L} AS l (mutex, owner, acquired_at, ttl_at, transition_at, token, holding,
                        once_window, once_label, once_host, once_token, once_started_at,
                        once_finished, once_exit_code, once_finished_at, once_period,
                        once_offset, holder, holder_token, history_seq, acquisitions, losses,
                        lease_ms)
  SELECT $1, CASE WHEN n.ms < q.till THEN '' ELSE $2::text END, n.ms, n.ms + $3::bigint,
         CASE WHEN n.ms < q.till THEN 0 ELSE n.ms + $3::bigint + $4::bigint END,
         CASE WHEN n.ms < q.till THEN 0 ELSE n.us END, false,
         CASE WHEN n.ms < q.till THEN NULL ELSE w.start END, $9::text, $10::text, n.us, n.ms,
         false, 0, 0, $6::bigint, $7::bigint, NULLIF($11::text, ''),
         CASE WHEN n.ms < q.till THEN 0 ELSE n.us END,
         CASE WHEN n.ms < q.till THEN 0 ELSE 1 END, CASE WHEN n.ms < q.till THEN 0 ELSE 1 END, 0,
         $3::bigint + $4::bigint
  FROM n CROSS JOIN q CROSS JOIN w LEFT JOIN old ON true
  ON CONFLICT (mutex) DO UPDATE SET
    owner = CASE WHEN {C} THEN '' ELSE $2::text END,
    lease_ms = CASE WHEN {C} THEN 0 ELSE excluded.lease_ms END,
    acquired_at = CASE WHEN {D} THEN {NOW} ELSE l.acquired_at END,
    token = CASE WHEN {D} THEN {TOKEN} ELSE l.token END,
    ttl_at = CASE WHEN {C} THEN least(l.ttl_at, {NOW}) ELSE excluded.ttl_at END,
    transition_at = CASE WHEN {C} THEN {NOW} ELSE excluded.ttl_at + $4::bigint END,
    holding = false,
    once_window = CASE WHEN {START} THEN {W} ELSE l.once_window END,
    once_label = CASE WHEN {START} THEN $9::text ELSE l.once_label END,
    once_host = CASE WHEN {START} THEN $10::text ELSE l.once_host END,
    once_token = CASE WHEN {D} THEN {TOKEN} WHEN {B} THEN l.token ELSE l.once_token END,
    once_started_at = CASE WHEN {START} THEN {NOW} ELSE l.once_started_at END,
    once_finished = CASE WHEN {START} THEN false ELSE l.once_finished END,
    once_exit_code = CASE WHEN {START} THEN 0 ELSE l.once_exit_code END,
    once_finished_at = CASE WHEN {START} THEN 0 ELSE l.once_finished_at END,
    once_period = CASE WHEN {START} THEN $6::bigint ELSE l.once_period END,
    once_offset = CASE WHEN {START} THEN $7::bigint ELSE l.once_offset END,
    holder = CASE WHEN {D} THEN excluded.holder ELSE l.holder END,
    holder_token = CASE WHEN {D} THEN {TOKEN} ELSE l.holder_token END,
    history_seq = CASE WHEN {D} THEN coalesce(l.history_seq, 0) +
                                     CASE WHEN l.owner <> '' THEN 2 ELSE 1 END
                       ELSE l.history_seq END,
    acquisitions = CASE WHEN {D} THEN coalesce(l.acquisitions, 0) + 1 ELSE l.acquisitions END,
    losses = CASE WHEN {D} THEN coalesce(l.losses, 0) + {EXPIRY_LOSS} ELSE l.losses END
  WHERE {MINE} OR {D}
  RETURNING l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
            l.once_window, l.once_label, l.once_host, l.once_token, l.once_started_at,
            l.once_finished, l.once_exit_code, l.once_finished_at, l.once_period, l.once_offset,
            NOT (l.owner = '' AND l.token = 0) AS changed, coalesce(l.history_seq, 0) AS hseq))";

// $11: the holder, as acquire's $6. A lease of ours ended because its
// window may not run (C) is no event.
std::string acquire_once_sql(int64_t history) {
  std::string once = once_terms(k_acquire_once);
  once.replace(once.find("{WINDOW}"), std::strlen("{WINDOW}"),
               window_start_sql("n.ms", "$6::bigint", "$7::bigint"));
  return std::string("WITH ") + k_now + ",\n" +
         quarantine("$3::bigint + $4::bigint", "$5::boolean") + k_old_row + fifo_gate(false) + k_mark +
         once + history_writes(acquired_events("$11"), history) +
         answer(true, "", k_once_columns, true, true);
}

// release_once: release's $1..$4, then $5 the exit code: the done record
// of the run that ends (the one with its token) gets it and the time.
constexpr const char* k_release_once = R"(,
up AS (
  UPDATE {L} AS l SET owner = '', holding = false, ttl_at = least(l.ttl_at, n.ms),
                      transition_at = n.ms, lease_ms = 0,
    once_finished = CASE WHEN l.once_token = l.token THEN true ELSE l.once_finished END,
    once_exit_code = CASE WHEN l.once_token = l.token THEN $5::integer ELSE l.once_exit_code END,
    once_finished_at = CASE WHEN l.once_token = l.token THEN n.ms ELSE l.once_finished_at END,
    history_seq = coalesce(l.history_seq, 0) + 1
  FROM n
  WHERE l.mutex = $1 AND l.owner = $2::text AND l.owner <> ''
    AND ($3::bigint = 0 OR l.token = $3::bigint) AND l.transition_at > n.ms
  RETURNING l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
            l.once_window, l.once_label, l.once_host, l.once_token, l.once_started_at,
            l.once_finished, l.once_exit_code, l.once_finished_at, l.once_period, l.once_offset,
            true AS changed,
            l.history_seq AS hseq))";

// guard, hold, extend, begin_step: $1 mutex, $2 contender, $3 token, $4
// ttl_ms, $5 transition_ms, $6 'guard', 'hold' (--min-hold: marked as only
// held), 'keep' (extend: the mark as it is; a held lease kept without a
// transition, a guarded one never shortened) or 'step' (a guard, only of a
// lease marked as only held: no other step runs under it). Only the valid
// owner's lease with that token.
constexpr const char* k_guard = R"(,
up AS (
  UPDATE {L} AS l SET
    ttl_at = CASE WHEN $6 = 'keep' AND l.holding THEN n.ms + $4::bigint + $5::bigint
                  WHEN $6 = 'keep' THEN greatest(n.ms + $4::bigint, l.ttl_at)
                  ELSE n.ms + $4::bigint END,
    transition_at = CASE WHEN $6 = 'keep' AND l.holding THEN n.ms + $4::bigint + $5::bigint
                         WHEN $6 = 'keep'
                           THEN greatest(greatest(n.ms + $4::bigint, l.ttl_at) + $5::bigint,
                                         l.transition_at)
                         ELSE n.ms + $4::bigint + $5::bigint END,
    lease_ms = CASE WHEN $6 = 'keep' AND NOT l.holding
                      THEN greatest(greatest(n.ms + $4::bigint, l.ttl_at) + $5::bigint,
                                    l.transition_at) - n.ms
                    ELSE $4::bigint + $5::bigint END,
    holding = CASE WHEN $6 = 'keep' THEN l.holding ELSE $6 = 'hold' END{MARK}
  FROM n
  WHERE l.mutex = $1 AND l.owner = $2::text AND l.owner <> '' AND l.token = $3::bigint
    AND l.transition_at > n.ms AND ($6 <> 'step' OR l.holding)
  RETURNING l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
            true AS changed))";

// release: $1 mutex, $2 contender, $3 token (0: any of the contender's),
// $4 CMD's exit code ("" unknown: the history's). The lease ends now; the
// row keeps the token; the first live waiter is woken (make_statements).
constexpr const char* k_release = R"(,
up AS (
  UPDATE {L} AS l SET owner = '', holding = false, ttl_at = least(l.ttl_at, n.ms),
                      transition_at = n.ms, lease_ms = 0,
                      history_seq = coalesce(l.history_seq, 0) + 1
  FROM n
  WHERE l.mutex = $1 AND l.owner = $2::text AND l.owner <> ''
    AND ($3::bigint = 0 OR l.token = $3::bigint) AND l.transition_at > n.ms
  RETURNING l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
            true AS changed, l.history_seq AS hseq))";

// end_revoked: $1 mutex, $2 token, $3 the former owner (backend.hpp). The
// lease revoked by force_release (no owner, transition_at kept so that its
// CMD stops first) with token $2 ends now; the first live waiter is woken
// (make_statements). No history event: the revocation wrote 'forced', the
// owner 'lost'.
constexpr const char* k_end_revoked = R"(,
up AS (
  UPDATE {L} AS l SET holding = false, ttl_at = least(l.ttl_at, n.ms), transition_at = n.ms,
                      lease_ms = 0
  FROM n
  WHERE l.mutex = $1 AND l.owner = '' AND $2::bigint <> 0 AND l.token = $2::bigint
    AND l.transition_at > n.ms
  RETURNING l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
            true AS changed))";

// release, release_once: the releaser's place in the queue goes in the
// same statement. Left by its simba after the release, the place could
// still be there when the next owner released (a short CMD, a busy
// machine): that release would wake the one who was leaving, and the
// others would wait for their timers.
constexpr const char* k_leave_queue = R"(,
left_queue AS (DELETE FROM {Z} WHERE mutex = $1 AND contender = $2::text))";

// force_release: $1 mutex, $2 token (0: any), $3 the channel, $4 who
// forces it (the holder, for the history), $5 by its owner (release
// --lease: a lease only held ends as a release, no loss). A lease only
// held ends now; one whose CMD may run is revoked: no owner, transition_at
// kept.
constexpr const char* k_force_release = R"(,
up AS (
  UPDATE {L} AS l SET owner = '', holding = false, ttl_at = least(l.ttl_at, n.ms),
                      transition_at = CASE WHEN l.holding THEN n.ms ELSE l.transition_at END,
                      history_seq = coalesce(l.history_seq, 0) + 1,
                      losses = coalesce(l.losses, 0) +
                        CASE WHEN l.lost_token IS DISTINCT FROM l.token
                              AND NOT ($5::boolean AND l.holding) THEN 1 ELSE 0 END
  FROM n CROSS JOIN old
  WHERE l.mutex = $1 AND l.owner <> '' AND l.transition_at > n.ms
    AND ($2::bigint = 0 OR l.token = $2::bigint)
  RETURNING l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
            true AS changed, l.history_seq AS hseq))";

// The channel of the first waiter whose session still runs, but `skip`.
// Alive: pg_stat_get_activity(pid) has its row (the function under the
// view pg_stat_activity, whose planning costs a new connection about a
// millisecond more).
std::string first_waiter(const std::string& skip) {
  return R"((SELECT z.channel FROM {Z} z
    WHERE z.mutex = $1 AND z.contender <> )" +
         skip + R"(
      AND EXISTS (SELECT 1 FROM pg_stat_get_activity(z.pid))
    ORDER BY z.queued_at LIMIT 1))";
}

} // namespace

// floor((now - offset) / period) * period + offset, as now less the
// distance from the window's start: PostgreSQL's % keeps the dividend's
// sign (a truncating division), so the distance is made non-negative
// before it is taken off (times before the epoch floor, as in C++).
std::string window_start_sql(const std::string& now, const std::string& period,
                             const std::string& offset) {
  return "(" + now + " - ((" + now + " - " + offset + ") % " + period + " + " + period + ") % " +
         period + ")";
}

// The tables are read (the marker's INSERT) only after the ALTERs: a
// script that read a table and then altered it deadlocked with another
// doing the same (each waiting to upgrade its lock past the other's).
std::string schema_sql(const std::string& schema, const std::string& prefix) {
  return fill(R"(CREATE TABLE IF NOT EXISTS {L} (
  mutex text PRIMARY KEY, owner text NOT NULL, acquired_at bigint NOT NULL,
  ttl_at bigint NOT NULL, transition_at bigint NOT NULL, token bigint NOT NULL,
  holding boolean NOT NULL, last_run_at bigint, once_window bigint, once_label text,
  once_host text, once_token bigint, once_started_at bigint, once_finished boolean,
  once_exit_code integer, once_finished_at bigint);
CREATE TABLE IF NOT EXISTS {S} (
  id integer PRIMARY KEY CHECK (id = 1), run text NOT NULL, until_ms bigint NOT NULL,
  longest bigint NOT NULL);
CREATE TABLE IF NOT EXISTS {Z} (
  mutex text NOT NULL, contender text NOT NULL, channel text NOT NULL,
  queued_at bigint NOT NULL, pid integer NOT NULL, PRIMARY KEY (mutex, contender));)" +
                  std::string(k_status_schema) + R"(
INSERT INTO {S} SELECT 1,
  extract(epoch FROM pg_postmaster_start_time())::text, 0, 0
  WHERE NOT EXISTS (SELECT 1 FROM {L}) ON CONFLICT (id) DO NOTHING;)",
              table_name(schema, prefix, "leases"), table_name(schema, prefix, "server"),
              table_name(schema, prefix, "waiters"), table_name(schema, prefix, "history"));
}

namespace {

std::string create_schema_sql(const std::string& schema) {
  return "CREATE SCHEMA IF NOT EXISTS " + quote_identifier(schema) + ";\n";
}

// The waiters' queue (wakeups.hpp): $1 mutex, $2 contender, $3 its
// channel, $4 its holder ("" none), $5 when it first queued in this wait
// (0: now). enqueue keeps the place of one already queued, drops the dead
// (their session is gone), and answers whether the waiter must look (no
// valid owner, whose release would wake it) and its queued_at. A waiter
// whose session was lost (a restart: every session is) queues again with
// its first queued_at, whoever comes back first: the queue keeps the order
// of arrival (core/fifo.hpp).
constexpr const char* k_enqueue = R"(,
gone AS (DELETE FROM {Z} z WHERE z.mutex = $1 AND z.contender <> $2::text
           AND NOT EXISTS (SELECT 1 FROM pg_stat_get_activity(z.pid))),
up AS (INSERT INTO {Z} (mutex, contender, channel, queued_at, pid, holder)
       SELECT $1, $2::text, $3::text, CASE WHEN $5::bigint > 0 THEN $5::bigint ELSE n.us END,
              pg_backend_pid(), NULLIF($4::text, '') FROM n
       ON CONFLICT (mutex, contender) DO UPDATE SET channel = excluded.channel,
                                                    pid = excluded.pid,
                                                    holder = excluded.holder
       RETURNING queued_at)
SELECT NOT EXISTS (SELECT 1 FROM {L} WHERE mutex = $1 AND owner <> '' AND transition_at > n.ms),
       (SELECT queued_at FROM up)
FROM n)";

} // namespace

Statements::Statements(const std::string& schema, const std::string& prefix)
    : m_schema(schema), m_prefix(prefix), m_leases(table_name(schema, prefix, "leases")),
      m_server(table_name(schema, prefix, "server")),
      m_waiters(table_name(schema, prefix, "waiters")),
      m_history(table_name(schema, prefix, "history")) {}

const std::string& Statements::sql(Id id) const {
  const int at = static_cast<int>(id);
  if (!m_built[at]) {
    m_made[at] = make(id);
    m_built[at] = true;
  }
  return m_made[at];
}

std::string Statements::fill(const std::string& sql) const {
  return pg::fill(sql, m_leases, m_server, m_waiters, m_history);
}

// The statements of the lease's operations.
std::string Statements::make_lease_sql(Id id) const {
  const int64_t limit = history_limit();
  const std::string with_now = std::string("WITH ") + k_now;
  std::string guard = k_guard;
  switch (id) {
  case Id::acquire: return fill(with_counters(acquire_sql(limit)));
  case Id::guard:
    return fill(with_now + guard.replace(guard.find("{MARK}"), 6, "") + answer(false));
  // guard_mark: guard's, and $7 (boolean) 'record'. Only when it renewed:
  // the start of the last run as it was (the statement's snapshot) in a
  // tenth column, and with $7 now as the start of this run.
  case Id::guard_mark:
    return fill(with_now +
                guard.replace(guard.find("{MARK}"), 6,
                              ",\n    last_run_at = CASE WHEN $7::boolean THEN n.ms "
                              "ELSE l.last_run_at END") +
                answer(false, "",
                       ",\n       CASE WHEN r.changed THEN (SELECT last_run_at FROM {L} "
                       "WHERE mutex = $1) END"));
  // A release wakes the first live waiter in the queue (not the
  // releaser), on its own channel. Live: the session that queued it (its
  // LISTEN) still runs.
  case Id::release:
    return fill(with_now + k_release + k_leave_queue +
                history_writes(released_events("$4"), limit) +
                answer(false, first_waiter("$2::text")));
  case Id::end_revoked:
    return fill(with_now + k_end_revoked + answer(false, first_waiter("$3::text")));
  // A forced release that freed the mutex (a lease only held) wakes the
  // first live waiter, as a release does; one that revoked a lease tells
  // the owner, and every waiter, on the mutex's channel.
  case Id::force_release:
    return fill(
        with_now + k_old_row + k_force_release +
        history_writes(forced_events("$4", "$5::boolean"), limit) +
        answer(false, "CASE WHEN (SELECT transition_at FROM up) <= (SELECT ms FROM n) THEN " +
                          first_waiter("''") + " ELSE $3::text END"));
  // get: $1 mutex, $2 quarantine (boolean): the lease, nothing written.
  case Id::get:
    return fill(with_now + ",\n" + quarantine("0", "$2::boolean") + R"(,
up AS (SELECT )" +
                k_fields + R"(, false AS changed FROM {L} WHERE false))" + answer(true));
  case Id::acquire_once: return fill(with_counters(acquire_once_sql(limit)));
  case Id::record_lost:
    return fill(with_now + k_record_lost + history_writes(k_lost_events, limit) + answer(false));
  case Id::record_skipped:
    return fill(with_now + k_record_skipped + history_writes(k_skipped_events, limit) +
                answer(false));
  case Id::release_once:
    return fill(with_now + k_release_once + k_leave_queue +
                history_writes(released_events("$5"), limit) +
                answer(false, "$4", k_once_columns, true));
  // done_record: get's, with the done record.
  case Id::done_record:
    return fill(with_now + ",\n" + quarantine("0", "$2::boolean") + R"(,
up AS (SELECT )" +
                k_fields + ", " + k_once_fields + R"(, false AS changed FROM {L} WHERE false))" +
                answer(true, "", k_once_columns, true));
  default: return "";
  }
}

std::string Statements::make(Id id) const {
  switch (id) {
  case Id::create_schema: return create_schema_sql(m_schema);
  case Id::schema: return schema_sql(m_schema, m_prefix);
  case Id::probe_leases: return fill("SELECT 1 FROM {L}, {S}, {Z} LIMIT 0");
  case Id::probe_schema: return probe_sql(m_schema, required_tables_in(schema()));
  case Id::enqueue: return fill(std::string("WITH ") + k_now + k_enqueue);
  case Id::dequeue: return fill("DELETE FROM {Z} WHERE mutex = $1 AND contender = $2::text");
  case Id::acquire_slot: return fill(with_counters(acquire_slot_sql(history_limit())));
  case Id::guard_slot: return fill(guard_slot_sql());
  case Id::release_slot: return fill(release_slot_sql(history_limit()));
  case Id::force_release_slot: return fill(force_release_slot_sql(history_limit()));
  case Id::inspect:
    return fill(inspect_sql(std::string("WITH ") + k_now + ",\n" + quarantine("0", "$1::boolean")));
  case Id::history: return fill(k_history_read);
  case Id::place: return fill(k_place);
  default: return make_lease_sql(id);
  }
}

} // namespace simba::backend::pg
