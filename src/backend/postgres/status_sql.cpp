// The SQL of status and history on PostgreSQL (status_sql.hpp).
#include "backend/postgres/status_sql.hpp"

namespace simba::backend::pg {

const char* const k_status_schema = R"(
ALTER TABLE {L} ADD COLUMN IF NOT EXISTS holder text,
  ADD COLUMN IF NOT EXISTS holder_token bigint, ADD COLUMN IF NOT EXISTS history_seq bigint,
  ADD COLUMN IF NOT EXISTS acquisitions bigint, ADD COLUMN IF NOT EXISTS losses bigint,
  ADD COLUMN IF NOT EXISTS lost_token bigint, ADD COLUMN IF NOT EXISTS lease_ms bigint,
  ADD COLUMN IF NOT EXISTS once_period bigint, ADD COLUMN IF NOT EXISTS once_offset bigint;
ALTER TABLE {Z} ADD COLUMN IF NOT EXISTS holder text;
CREATE TABLE IF NOT EXISTS {H} (
  mutex text NOT NULL, seq bigint NOT NULL, at bigint NOT NULL, event text NOT NULL,
  owner text NOT NULL, holder text, token bigint NOT NULL, exit_code integer, held_ms bigint,
  waited_ms bigint, PRIMARY KEY (mutex, seq));
ALTER TABLE {H} ADD COLUMN IF NOT EXISTS reason text,
  ADD COLUMN IF NOT EXISTS by_owner text;)";

const char* const k_old_row = R"(,
old AS (SELECT owner AS o_owner, acquired_at AS o_acquired_at, transition_at AS o_transition_at,
               token AS o_token, ttl_at AS o_ttl_at
        FROM {L} WHERE mutex = $1 FOR UPDATE))";

// A new lease replacing `l` (the row before the write): one more loss
// when `l` ran out unreleased, unless it was only held or its holder's lost
// event counted it already (lost_token).
const char* const k_expiry_loss =
    "CASE WHEN l.owner <> '' AND NOT l.holding AND l.lost_token IS DISTINCT FROM l.token "
    "THEN 1 ELSE 0 END";

// Only the newest `limit` are written: the trim cannot see the rows this
// statement adds (its snapshot is older). A row of the same number is
// replaced: a lease row lost (a server that lost its last writes, a row
// deleted by hand) counts again from 0, and its history must never stop
// a lease.
std::string history_writes(const std::string& ev, int64_t limit, const std::string& mutex) {
  // No history: the events are not written, but their CTE stays (never
  // read, so never run): the statement still takes every parameter its
  // caller binds (else "bind message supplies 8 parameters, but prepared
  // statement requires 3").
  if (limit <= 0) return ",\n" + ev;
  std::string lim = std::to_string(limit);
  return ",\n" + ev + R"(,
ins AS (
  INSERT INTO {H} (mutex, seq, at, event, owner, holder, token, exit_code, held_ms, waited_ms,
                   reason, by_owner)
  SELECT )" +
         mutex + R"(, e.seq, e.at, e.event, e.owner, e.holder, e.token, e.exit_code, e.held_ms,
         e.waited_ms, e.reason, e.by_owner
  FROM ev e CROSS JOIN up WHERE e.seq > up.hseq - )" +
         lim + R"(
  ON CONFLICT (mutex, seq) DO UPDATE SET at = excluded.at, event = excluded.event,
    owner = excluded.owner, holder = excluded.holder, token = excluded.token,
    exit_code = excluded.exit_code, held_ms = excluded.held_ms, waited_ms = excluded.waited_ms,
    reason = excluded.reason, by_owner = excluded.by_owner
  RETURNING seq),
cut AS (
  DELETE FROM {H} h USING up
  WHERE h.mutex = )" +
         mutex + R"( AND h.seq <= up.hseq - )" + lim + R"( AND EXISTS (SELECT 1 FROM ev)))";
}

// A new lease (an owner, another token than the row had): "acquired",
// after "expired" for the lease it replaces when that one still had an
// owner (it ran out unreleased; nobody else sees its end). waited_ms: since
// the contender joined the queue (0 when it never waited).
std::string acquired_events(const std::string& holder) {
  return R"(ev AS (
  SELECT up.hseq - 1 AS seq, 'expired' AS event, o.o_transition_at AS at, o.o_owner AS owner,
         NULL::text AS holder, o.o_token AS token, NULL::integer AS exit_code,
         o.o_transition_at - o.o_acquired_at AS held_ms, NULL::bigint AS waited_ms,
         NULL::text AS reason, NULL::text AS by_owner
  FROM up CROSS JOIN old o
  WHERE up.owner <> '' AND up.token <> o.o_token AND o.o_owner <> ''
  UNION ALL
  SELECT up.hseq, 'acquired', n.ms, up.owner, NULLIF()" +
         holder + R"(::text, ''), up.token, NULL, NULL,
         greatest(0, n.ms - coalesce((SELECT z.queued_at / 1000 FROM {Z} z
                                      WHERE z.mutex = $1 AND z.contender = up.owner), n.ms)),
         NULL, NULL
  FROM n CROSS JOIN up
  WHERE up.owner <> '' AND up.token IS DISTINCT FROM (SELECT o_token FROM old)))";
}

std::string released_events(const std::string& exit_code) {
  return R"(ev AS (
  SELECT up.hseq AS seq, 'released' AS event, n.ms AS at, $2::text AS owner,
         NULL::text AS holder, up.token AS token, NULLIF()" +
         exit_code + R"(::text, '')::integer AS exit_code, n.ms - up.acquired_at AS held_ms,
         NULL::bigint AS waited_ms, NULL::text AS reason, NULL::text AS by_owner
  FROM n CROSS JOIN up))";
}

std::string forced_events(const std::string& holder, const std::string& by_owner) {
  // by_owner (release --lease): a lease that ended now (it was only held)
  // is released, and names no forcer.
  const std::string released = "(" + by_owner + " AND up.transition_at <= n.ms)";
  return R"(ev AS (
  SELECT up.hseq AS seq, CASE WHEN )" + released + R"( THEN 'released' ELSE 'forced' END AS event,
         n.ms AS at, o.o_owner AS owner,
         CASE WHEN )" + released + R"( THEN NULL ELSE NULLIF()" +
         holder + R"(::text, '') END AS holder, o.o_token AS token, NULL::integer AS exit_code,
         n.ms - o.o_acquired_at AS held_ms, NULL::bigint AS waited_ms, NULL::text AS reason,
         NULL::text AS by_owner
  FROM n CROSS JOIN up CROSS JOIN old o))";
}

// lost: $1 mutex, $2 contender, $3 token, $4 holder, $5 exit code ("" none),
// $6 held_ms, $7 reason, $8 by ("" none). Only the row's bookkeeping
// changes (its event count, losses, lost_token: backend.hpp record_lost),
// never its lease: a loss when the row still shows lease $3 as $2's (valid
// or run out: noted) or has no trace of it (an older token).
const char* const k_record_lost = R"(,
up AS (
  UPDATE {L} AS l SET history_seq = coalesce(l.history_seq, 0) + 1,
    losses = coalesce(l.losses, 0) +
      CASE WHEN (l.owner = $2::text AND l.owner <> '' AND l.token = $3::bigint)
             OR l.token < $3::bigint THEN 1 ELSE 0 END,
    lost_token = CASE WHEN l.owner = $2::text AND l.owner <> '' AND l.token = $3::bigint
                      THEN $3::bigint ELSE l.lost_token END
  FROM n
  WHERE l.mutex = $1
  RETURNING l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
            false AS changed, l.history_seq AS hseq))";

const char* const k_lost_events = R"(ev AS (
  SELECT up.hseq AS seq, 'lost' AS event, n.ms AS at, $2::text AS owner,
         NULLIF($4::text, '') AS holder, $3::bigint AS token,
         NULLIF($5::text, '')::integer AS exit_code, $6::bigint AS held_ms,
         NULL::bigint AS waited_ms, $7::text AS reason, NULLIF($8::text, '') AS by_owner
  FROM n CROSS JOIN up))";

// skipped: $1 mutex, $2 contender, $3 token, $4 holder, $5 exit code ("" none),
// $6 held_ms ("" none), $7 reason, $8 by ("" none), $9 waited_ms. Only the
// row's event count changes: no lease, counter or done record.
const char* const k_record_skipped = R"(,
up AS (
  UPDATE {L} AS l SET history_seq = coalesce(l.history_seq, 0) + 1
  FROM n
  WHERE l.mutex = $1
  RETURNING l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token, l.holding,
            false AS changed, l.history_seq AS hseq))";

const char* const k_skipped_events = R"(ev AS (
  SELECT up.hseq AS seq, 'skipped' AS event, n.ms AS at, $2::text AS owner,
         NULLIF($4::text, '') AS holder, $3::bigint AS token,
         NULLIF($5::text, '')::integer AS exit_code, NULLIF($6::text, '')::bigint AS held_ms,
         $9::bigint AS waited_ms, $7::text AS reason, NULLIF($8::text, '') AS by_owner
  FROM n CROSS JOIN up))";

std::string inspect_sql(const std::string& with_now_and_quarantine) {
  return with_now_and_quarantine + R"(
SELECT n.ms, q.till, x.kind, x.mutex, x.owner, x.acquired_at, x.ttl_at, x.transition_at,
       x.token, x.holding, x.holder, x.acquisitions, x.losses
FROM n CROSS JOIN q LEFT JOIN (
  SELECT 0 AS kind, l.mutex, l.owner, l.acquired_at, l.ttl_at, l.transition_at, l.token,
         l.holding, CASE WHEN l.holder_token = l.token THEN l.holder END AS holder,
         0::bigint AS queued, coalesce(l.acquisitions, 0) AS acquisitions,
         coalesce(l.losses, 0) AS losses
  FROM {L} l WHERE l.token > 0 AND ($2 = '' OR l.mutex = $2 OR l.mutex IN (
    SELECT $2 || '#' || g.k FROM {L} s, generate_series(0, CASE
      WHEN s.owner ~ '^#slots:[0-9]{1,6}$' THEN substr(s.owner, 8)::integer - 1 ELSE -1 END) g(k)
    WHERE s.mutex = $2))
  UNION ALL
  SELECT 1, z.mutex, z.contender, z.queued_at / 1000, NULL, NULL, NULL, NULL, z.holder,
         z.queued_at, NULL, NULL
  FROM {Z} z WHERE ($2 = '' OR z.mutex = $2)
    AND EXISTS (SELECT 1 FROM pg_stat_get_activity(z.pid))) x ON true
ORDER BY x.mutex COLLATE "C", x.kind, x.queued)";
}

const char* const k_history_read = R"(WITH n AS (
  SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms)
SELECT n.ms, h.mutex, h.at, h.event, h.owner, h.holder, h.token, h.exit_code, h.held_ms,
       h.waited_ms, h.reason, h.by_owner
FROM n LEFT JOIN {H} h ON ($1 = '' OR h.mutex = $1 OR left(h.mutex, length($1) + 1) = $1 || '#')
  AND h.at >= $2::bigint
ORDER BY h.at, h.mutex COLLATE "C", h.seq)";

const char* const k_place = R"(SELECT z.contender = $2::text FROM {Z} z
WHERE z.mutex = $1 AND EXISTS (SELECT 1 FROM pg_stat_get_activity(z.pid))
ORDER BY z.queued_at)";

} // namespace simba::backend::pg
