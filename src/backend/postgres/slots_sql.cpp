// The SQL of --slots N on PostgreSQL (slots_sql.hpp). The rules are those
// of sqlite/slot_rows.cpp and redis/lua/acquire_slot.lua (keep them
// alike): the slot the contender holds is renewed, else a free one is
// taken (the first by number) with a token above the marker's and every
// slot's, else the slot that frees first is answered; a marker of another
// N, or a plain holder, refuses; the marker ends with the last slot that
// is not free (to now when every slot is: the next acquirer's N wins).
#include "backend/postgres/slots_sql.hpp"

#include "backend/postgres/sql_parts.hpp"
#include "backend/postgres/status_sql.hpp"
#include "core/slots.hpp"

namespace simba::backend::pg {
namespace {

// The N that a marker's owner records (core::slots_of_owner): 0 no owner,
// 1 a plain holder.
std::string slots_of(const std::string& owner) {
  return "CASE WHEN " + owner + " = '' THEN 0 WHEN " + owner +
         " !~ '^#slots:[0-9]{1,6}$' THEN 1 ELSE greatest(substr(" + owner + ", 8)::integer, 1) END";
}

// The marker of mutex `m` (an SQL expression) as in the snapshot, with its
// xmin (the version a write requires) and the N it records.
std::string marker(const std::string& m) {
  return R"(,
mk AS (SELECT l.xmin AS x, l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
              )" +
         slots_of("l.owner") + R"( AS slots
       FROM {L} l WHERE l.mutex = )" +
         m + ")";
}

// Slots 0 to count-1 of `m` as in the snapshot (a slot never used: free
// since 0, token 0).
std::string slots(const std::string& m, const std::string& count) {
  return R"(,
sl AS (SELECT g.k, )" +
         m + R"( || '#' || g.k AS row, coalesce(l.owner, '') AS owner,
              coalesce(l.acquired_at, 0) AS acquired_at, coalesce(l.ttl_at, 0) AS ttl_at,
              coalesce(l.transition_at, 0) AS transition_at, coalesce(l.token, 0) AS token,
              coalesce(l.holding, false) AS holding
       FROM generate_series(0, )" +
         count + R"( - 1) g(k) LEFT JOIN {L} l ON l.mutex = )" + m + R"( || '#' || g.k))";
}

// After `nv` (the slot's row as the statement writes it: none when it
// writes nothing): the slots as they will be (af), and the marker over
// them (cv: ended with the last slot not free, to now when each is; how
// many are free).
constexpr const char* k_cover = R"(,
af AS (SELECT nv.row, nv.owner, nv.ttl_at, nv.transition_at FROM nv
       UNION ALL
       SELECT sl.row, sl.owner, sl.ttl_at, sl.transition_at FROM sl
       WHERE NOT EXISTS (SELECT 1 FROM nv WHERE nv.row = sl.row)),
cv AS (SELECT greatest(n.ms, (SELECT max(af.ttl_at) FROM af WHERE af.transition_at > n.ms))
                AS ttl_at,
              greatest(n.ms, (SELECT max(af.transition_at) FROM af WHERE af.transition_at > n.ms))
                AS transition_at,
              (SELECT count(*) FROM af WHERE af.transition_at <= n.ms) AS free
       FROM n))";

// A write of a slot's row: the marker of `m` first, only if it is the
// version of the snapshot (mw: a row when the slot's row may be written;
// none when the marker changed: retry). A row of no marker of slots (none
// can be valid then, nothing is ordered) lets the write go alone.
std::string move_marker(const std::string& m) {
  return R"(,
mup AS (
  UPDATE {L} l SET ttl_at = cv.ttl_at, transition_at = cv.transition_at, holding = false
  FROM mk CROSS JOIN cv
  WHERE l.mutex = )" +
         m + R"( AND l.xmin = mk.x AND mk.slots >= 2 AND EXISTS (SELECT 1 FROM nv)
  RETURNING 1 AS one),
mw AS (SELECT one FROM mup
       UNION ALL SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM mk WHERE mk.slots >= 2)))";
}

// The answer's three more columns of a write of the slot's row $1.
constexpr const char* k_write_columns =
    ",\n       split_part($1::text, '#', 2)::integer, 0,"
    "\n       EXISTS (SELECT 1 FROM nv) AND NOT EXISTS (SELECT 1 FROM mw)";

// The statements on a slot's row ($1): its mutex.
const std::string k_mutex_of_row = "split_part($1::text, '#', 1)";

// The slots of a write: those the marker records.
std::string write_slots() {
  return marker(k_mutex_of_row) +
         slots(k_mutex_of_row,
               "coalesce((SELECT CASE WHEN mk.slots >= 2 THEN mk.slots ELSE 0 END FROM mk), 0)");
}

// The channel of the waiter a freed slot wakes (NULL: none): of `m`'s live
// waiters that hold no slot, but `skip`, the last of the first F, F the
// free slots after the write. The first F-1 were woken by the releases of
// the other free slots and may still be on their way (redis/lua/common.lua:
// wake_waiter does the same): with F free, each of the first F may take
// one (core::may_take_free_slot).
std::string wake_one(const std::string& m, const std::string& skip) {
  return R"((SELECT w.channel FROM (
      SELECT z.channel, z.queued_at FROM {Z} z
      WHERE z.mutex = )" +
         m + " AND z.contender <> " + skip + R"(
        AND NOT EXISTS (SELECT 1 FROM af WHERE af.owner = z.contender
                                           AND af.transition_at > (SELECT ms FROM n))
        AND EXISTS (SELECT 1 FROM pg_stat_get_activity(z.pid))
      ORDER BY z.queued_at LIMIT (SELECT free FROM cv)) w
    ORDER BY w.queued_at DESC LIMIT 1))";
}

const std::string k_fallback = std::to_string(core::k_slot_fallback_ms);

// st: the state of the slots, as the decision reads it.
std::string slots_state() {
  return R"(,
st AS (
  SELECT coalesce((SELECT CASE WHEN mk.transition_at <= n.ms THEN 0 ELSE mk.slots END FROM mk), 0)
           AS recorded,
         coalesce((SELECT mk.owner = '' AND mk.transition_at > n.ms FROM mk), false) AS revoked,
         (SELECT sl.k FROM sl WHERE sl.owner = $2::text AND sl.transition_at > n.ms
          ORDER BY sl.k LIMIT 1) AS mine,
         (SELECT sl.k FROM sl WHERE sl.transition_at <= n.ms ORDER BY sl.k LIMIT 1) AS first_free,
         (SELECT count(*) FROM sl WHERE sl.transition_at <= n.ms) AS free_count,
         (SELECT min(sl.transition_at) FROM sl WHERE sl.transition_at <= n.ms) AS free_since,
         (SELECT sl.k FROM sl ORDER BY sl.transition_at, sl.k LIMIT 1) AS soonest,
         (SELECT sl.k FROM sl WHERE sl.transition_at > n.ms ORDER BY sl.transition_at, sl.k LIMIT 1)
           AS soonest_held
  FROM n))";
}

// d: the act (see acquire_decision); nv: the slot's row as written.
std::string slot_act() {
  return R"(,
d AS (
  SELECT st.*, coalesce(st.mine, st.first_free) AS pick,
    CASE WHEN st.recorded <> 0 AND st.recorded <> $7::integer THEN 'refused'
         WHEN st.revoked THEN 'revoked'
         WHEN st.mine IS NOT NULL THEN 'renew'
         WHEN st.first_free IS NULL THEN 'full'
         WHEN n.ms < st.free_since + )" +
         k_fallback + R"( AND (
           SELECT count(*) FROM (
             SELECT 1 FROM {Z} z
             WHERE z.mutex = $1::text AND z.contender <> $2::text
               AND z.queued_at < coalesce((SELECT y.queued_at FROM {Z} y
                                           WHERE y.mutex = $1::text AND y.contender = $2::text),
                                          9223372036854775807)
               AND NOT EXISTS (SELECT 1 FROM sl WHERE sl.owner = z.contender
                                                  AND sl.transition_at > n.ms)
               AND EXISTS (SELECT 1 FROM pg_stat_get_activity(z.pid))
             ORDER BY z.queued_at LIMIT (SELECT free_count FROM st)) a) >= st.free_count
           THEN 'queued'
         WHEN n.ms < q.till THEN 'quarantine'
         ELSE 'new' END AS act
  FROM st CROSS JOIN n CROSS JOIN q),
nv AS (
  SELECT d.pick AS k, s.row, $2::text AS owner,
         CASE WHEN d.act = 'renew' THEN s.acquired_at ELSE n.ms END AS acquired_at,
         n.ms + $3::bigint AS ttl_at, n.ms + $3::bigint + $4::bigint AS transition_at,
         CASE WHEN d.act = 'renew' THEN s.token
              ELSE greatest(coalesce((SELECT mk.token FROM mk), 0) + 1,
                            (SELECT max(sl.token) FROM sl) + 1, n.us) END AS token
  FROM d CROSS JOIN n JOIN sl s ON s.k = d.pick
  WHERE d.act IN ('renew', 'new')))";
}

// The marker, then the slot's row, the queue place, the quarantine's marker.
std::string slot_writes() {
  return std::string(k_cover) + R"(,
mup AS (
  UPDATE {L} l SET owner = '#slots:' || $7::integer,
    acquired_at = CASE WHEN d.recorded = 0 THEN n.ms ELSE l.acquired_at END,
    token = greatest(l.token, nv.token), ttl_at = cv.ttl_at, transition_at = cv.transition_at,
    holding = false
  FROM n CROSS JOIN d CROSS JOIN nv CROSS JOIN cv CROSS JOIN mk
  WHERE l.mutex = $1::text AND l.xmin = mk.x
  RETURNING 1 AS one),
mins AS (
  INSERT INTO {L} (mutex, owner, acquired_at, ttl_at, transition_at, token, holding)
  SELECT $1::text, '#slots:' || $7::integer, n.ms, cv.ttl_at, cv.transition_at, nv.token, false
  FROM n CROSS JOIN nv CROSS JOIN cv WHERE NOT EXISTS (SELECT 1 FROM mk)
  ON CONFLICT (mutex) DO NOTHING
  RETURNING 1 AS one),
mw AS (SELECT one FROM mup UNION ALL SELECT one FROM mins),
old AS (SELECT s.owner AS o_owner, s.acquired_at AS o_acquired_at,
               s.transition_at AS o_transition_at, s.token AS o_token
        FROM sl s JOIN nv ON s.k = nv.k),
up AS (
  INSERT INTO {L} AS l (mutex, owner, acquired_at, ttl_at, transition_at, token, holding, holder,
                        holder_token, history_seq, acquisitions, losses)
  SELECT nv.row, nv.owner, nv.acquired_at, nv.ttl_at, nv.transition_at, nv.token, false,
         NULLIF($6::text, ''), nv.token, 1, 1, 0
  FROM nv WHERE EXISTS (SELECT 1 FROM mw)
  ON CONFLICT (mutex) DO UPDATE SET
    owner = excluded.owner, acquired_at = excluded.acquired_at, ttl_at = excluded.ttl_at,
    transition_at = excluded.transition_at, token = excluded.token, holding = false,
    holder = CASE WHEN excluded.token = l.token THEN l.holder ELSE excluded.holder END,
    holder_token = CASE WHEN excluded.token = l.token THEN l.holder_token
                        ELSE excluded.holder_token END,
    history_seq = CASE WHEN excluded.token = l.token THEN l.history_seq
                       ELSE coalesce(l.history_seq, 0) + CASE WHEN l.owner <> '' THEN 2 ELSE 1 END
                  END,
    acquisitions = CASE WHEN excluded.token = l.token THEN l.acquisitions
                        ELSE coalesce(l.acquisitions, 0) + 1 END,
    losses = CASE WHEN excluded.token = l.token THEN l.losses
                  ELSE coalesce(l.losses, 0) + {EXPIRY_LOSS} END
  WHERE (excluded.token = l.token AND l.owner = $2::text AND l.transition_at > (SELECT ms FROM n))
     OR (excluded.token <> l.token AND l.transition_at <= (SELECT ms FROM n))
  RETURNING l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
            true AS changed, coalesce(l.history_seq, 0) AS hseq),
left_queue AS (
  DELETE FROM {Z} WHERE mutex = $1::text AND contender = $2::text AND EXISTS (SELECT 1 FROM up)),
mark AS (
  INSERT INTO {S} AS s (id, run, until_ms, longest)
  SELECT 1, q.run, q.till, q.longest FROM q CROSS JOIN d
  WHERE $5::boolean AND q.lost
    AND d.act <> 'refused' AND (d.act <> 'new' OR EXISTS (SELECT 1 FROM mw))
  ON CONFLICT (id) DO UPDATE SET run = excluded.run,
    until_ms = greatest(s.until_ms, excluded.until_ms), longest = excluded.longest))";
}

// acquire_slot, after n, m, q (the quarantine of a new lease), mk and sl:
// st, the state of the slots; d, the decision (act); nv, the slot's row
// as written (renew, new); the marker (written first, see slots_sql.hpp),
// the slot's row, the queue place left (the next release wakes another,
// the waiters behind do not count us), the quarantine's marker (as
// acquire's, statements.cpp k_mark: whatever the act but a refusal, or a
// new lease another writer went before). The acts: refused
// (another N recorded), revoked (the marker), renew, full (no slot free),
// queued (live waiters before us take the free slots: FIFO), quarantine,
// new. The slot's row is also written only by the owner-or-expired rule on
// its newest version: never false while the marker orders the writers, it
// keeps a slot held by another from being overwritten if that ever failed.
std::string acquire_decision() { return slots_state() + slot_act() + slot_writes(); }

// What an acquisition that wrote nothing shows (sqlite/slot_rows.cpp:
// queued_behind for `queued`): the marker (refused, revoked), the slot
// that frees first (full), a lease not free before the timed fallback
// opens (queued: the held slot that frees sooner, else the marker ending
// then), or the slot it would take (quarantine, and a write that must be
// retried).
std::string acquire_shown() {
  const std::string fallback_at = "d.free_since + " + k_fallback;
  return R"(,
sh AS (
  SELECT 0 AS k, coalesce(mk.owner, '') AS owner, coalesce(mk.acquired_at, 0) AS acquired_at,
         coalesce(mk.ttl_at, 0) AS ttl_at, coalesce(mk.transition_at, 0) AS transition_at,
         coalesce(mk.token, 0) AS token, coalesce(mk.holding, false) AS holding
  FROM d LEFT JOIN mk ON true WHERE d.act IN ('refused', 'revoked')
  UNION ALL
  SELECT s.k, s.owner, s.acquired_at, s.ttl_at, s.transition_at, s.token, s.holding
  FROM d JOIN sl s ON s.k = d.soonest WHERE d.act = 'full'
  UNION ALL
  SELECT s.k, s.owner, s.acquired_at, least(s.ttl_at, s.transition_at), s.transition_at, s.token,
         s.holding
  FROM d JOIN sl s ON s.k = d.soonest_held
  WHERE d.act = 'queued' AND s.transition_at < )" +
         fallback_at + R"(
  UNION ALL
  SELECT 0, '#slots:' || $7::integer, coalesce(mk.acquired_at, 0),
         least(coalesce(mk.ttl_at, 0), )" +
         fallback_at + "), " + fallback_at + R"(, coalesce(mk.token, 0), false
  FROM d LEFT JOIN mk ON true
  WHERE d.act = 'queued'
    AND NOT EXISTS (SELECT 1 FROM sl s WHERE s.k = d.soonest_held AND s.transition_at < )" +
         fallback_at + R"()
  UNION ALL
  SELECT s.k, s.owner, s.acquired_at, s.ttl_at, s.transition_at, s.token, s.holding
  FROM d JOIN sl s ON s.k = d.pick WHERE d.act IN ('quarantine', 'renew', 'new'))
SELECT n.ms, coalesce(up.changed, false), coalesce(up.owner, sh.owner),
       coalesce(up.acquired_at, sh.acquired_at), coalesce(up.ttl_at, sh.ttl_at),
       coalesce(up.transition_at, sh.transition_at), coalesce(up.token, sh.token),
       coalesce(up.holding, sh.holding), q.till,
       CASE WHEN up.changed THEN nv.k ELSE coalesce(sh.k, 0) END,
       CASE WHEN d.act = 'refused' THEN d.recorded ELSE 0 END,
       nv.k IS NOT NULL AND NOT EXISTS (SELECT 1 FROM mw)
FROM n CROSS JOIN q CROSS JOIN d LEFT JOIN up ON true LEFT JOIN nv ON true LEFT JOIN sh ON true)";
}

} // namespace

std::string acquire_slot_sql(int64_t history_limit) {
  return std::string("WITH ") + k_now + ",\n" +
         quarantine("$3::bigint + $4::bigint", "$5::boolean") + marker("$1::text") +
         slots("$1::text", "$7::integer") + acquire_decision() +
         history_writes(acquired_events("$6"), history_limit, "(SELECT nv.row FROM nv)") +
         acquire_shown();
}

// guard's rule (statements.cpp: k_guard) on the slot's row.
std::string guard_slot_sql() {
  return std::string("WITH ") + k_now + write_slots() + R"(,
nv AS (
  SELECT c.mutex AS row, c.owner,
    CASE WHEN $6 = 'keep' AND c.holding THEN n.ms + $4::bigint + $5::bigint
         WHEN $6 = 'keep' THEN greatest(n.ms + $4::bigint, c.ttl_at)
         ELSE n.ms + $4::bigint END AS ttl_at,
    CASE WHEN $6 = 'keep' AND c.holding THEN n.ms + $4::bigint + $5::bigint
         WHEN $6 = 'keep'
           THEN greatest(greatest(n.ms + $4::bigint, c.ttl_at) + $5::bigint, c.transition_at)
         ELSE n.ms + $4::bigint + $5::bigint END AS transition_at,
    CASE WHEN $6 = 'keep' THEN c.holding ELSE $6 = 'hold' END AS holding
  FROM {L} c CROSS JOIN n
  WHERE c.mutex = $1::text AND c.owner = $2::text AND c.owner <> '' AND c.token = $3::bigint
    AND c.transition_at > n.ms AND ($6 <> 'step' OR c.holding)))" +
         k_cover + move_marker(k_mutex_of_row) + R"(,
up AS (
  UPDATE {L} l SET ttl_at = nv.ttl_at, transition_at = nv.transition_at, holding = nv.holding
  FROM nv CROSS JOIN n
  WHERE l.mutex = $1::text AND l.owner = $2::text AND l.token = $3::bigint
    AND l.transition_at > n.ms AND EXISTS (SELECT 1 FROM mw)
  RETURNING l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
            true AS changed))" +
         answer(false, "", k_write_columns);
}

// release's rule (k_release), its queue place left on the mutex's queue.
std::string release_slot_sql(int64_t history_limit) {
  return std::string("WITH ") + k_now + write_slots() + R"(,
nv AS (
  SELECT c.mutex AS row, ''::text AS owner, least(c.ttl_at, n.ms) AS ttl_at,
         n.ms AS transition_at
  FROM {L} c CROSS JOIN n
  WHERE c.mutex = $1::text AND c.owner = $2::text AND c.owner <> ''
    AND ($3::bigint = 0 OR c.token = $3::bigint) AND c.transition_at > n.ms))" +
         k_cover + move_marker(k_mutex_of_row) + R"(,
up AS (
  UPDATE {L} l SET owner = '', holding = false, ttl_at = least(l.ttl_at, n.ms),
                   transition_at = n.ms, history_seq = coalesce(l.history_seq, 0) + 1
  FROM n
  WHERE l.mutex = $1::text AND l.owner = $2::text AND l.owner <> ''
    AND ($3::bigint = 0 OR l.token = $3::bigint) AND l.transition_at > n.ms
    AND EXISTS (SELECT 1 FROM mw)
  RETURNING l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
            true AS changed, l.history_seq AS hseq),
left_queue AS (DELETE FROM {Z} WHERE mutex = )" +
         k_mutex_of_row + " AND contender = $2::text)" +
         history_writes(released_events("$4"), history_limit) +
         answer(false, wake_one(k_mutex_of_row, "$2::text"), k_write_columns);
}

// force_release's rule (k_force_release): a slot only held is freed (and
// wakes a waiter, as a release does), one whose CMD may run is revoked
// (its owner and every waiter hear it on the mutex's channel, $3).
std::string force_release_slot_sql(int64_t history_limit) {
  return std::string("WITH ") + k_now + write_slots() + R"(,
old AS (SELECT owner AS o_owner, acquired_at AS o_acquired_at, transition_at AS o_transition_at,
               token AS o_token
        FROM {L} WHERE mutex = $1::text),
nv AS (
  SELECT c.mutex AS row, ''::text AS owner, least(c.ttl_at, n.ms) AS ttl_at,
         CASE WHEN c.holding THEN n.ms ELSE c.transition_at END AS transition_at
  FROM {L} c CROSS JOIN n
  WHERE c.mutex = $1::text AND c.owner <> '' AND c.transition_at > n.ms
    AND ($2::bigint = 0 OR c.token = $2::bigint)))" +
         k_cover + move_marker(k_mutex_of_row) + R"(,
up AS (
  UPDATE {L} l SET owner = '', holding = false, ttl_at = least(l.ttl_at, n.ms),
                   transition_at = CASE WHEN l.holding THEN n.ms ELSE l.transition_at END,
                   history_seq = coalesce(l.history_seq, 0) + 1,
                   losses = coalesce(l.losses, 0) +
                     CASE WHEN l.lost_token IS DISTINCT FROM l.token THEN 1 ELSE 0 END
  FROM n
  WHERE l.mutex = $1::text AND l.owner <> '' AND l.transition_at > n.ms
    AND ($2::bigint = 0 OR l.token = $2::bigint) AND EXISTS (SELECT 1 FROM mw)
  RETURNING l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
            true AS changed, l.history_seq AS hseq))" +
         history_writes(forced_events("$4", "false"), history_limit) +
         answer(false,
                "CASE WHEN (SELECT transition_at FROM up) <= (SELECT ms FROM n) THEN " +
                    wake_one(k_mutex_of_row, "''") + " ELSE $3::text END",
                k_write_columns);
}

} // namespace simba::backend::pg
