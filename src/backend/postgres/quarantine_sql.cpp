// The server run and its quarantine on PostgreSQL (sql_parts.hpp), the
// fragments every acquiring statement starts with. The rules are those of
// redis/lua/common.lua (keep them alike).
//
// The server run (docs/backends/postgres.md): a primary that restarts after
// losing its last writes (synchronous_commit off, fsync off), or a standby
// promoted before it received them, may have lost a lease whose CMD still
// runs. The marker holds the run that last granted a lease
// (pg_postmaster_start_time(): a restart or a promoted standby has
// another), the end of the quarantine in force and the length of the last
// one; a missing marker or another run means that no new lease is granted
// for the longest lease that may still run + 1 s from then. Tables that
// simba has just made get a marker of the current run: nothing can have
// been lost there.
#include "backend/postgres/sql_parts.hpp"

namespace simba::backend::pg {

// The server's clock, read once: epoch ms (lease times), µs (token
// seeds); and the server run.
const char* const k_now = R"(n AS (
  SELECT floor(extract(epoch FROM t) * 1000)::bigint AS ms,
         floor(extract(epoch FROM t) * 1000000)::bigint AS us,
         extract(epoch FROM pg_postmaster_start_time())::text AS run
  FROM (SELECT clock_timestamp() AS t) c))";

// The quarantine for a lease of LEASE ms, QUARANTINE: 'on' or not: `till`
// (0: none), and whether the marker is to be written (`lost`: another run,
// or no marker). Its length (`longest`) is the longest lease live when the
// last write before this server run was made (lease_ms of the rows whose
// end was after it), or LEASE when longer: what may still run, read only
// when a loss shows (issue 36: the longest lease ever asked for never
// shrank). A row that a simba of before lease_ms wrote counts with the
// marker's longest.
std::string quarantine(const std::string& lease, const std::string& on) {
  return R"(m AS (SELECT run, until_ms, longest FROM {S} WHERE id = 1),
q0 AS (
  SELECT n.run, n.ms, m.run IS DISTINCT FROM n.run AS lost, m.until_ms,
         coalesce(m.longest, -1) AS known,
         floor(extract(epoch FROM pg_postmaster_start_time()) * 1000)::bigint AS started
  FROM n LEFT JOIN m ON true),
q1 AS (
  SELECT q0.*, CASE WHEN q0.lost AND )" +
         on + R"( THEN greatest((
    SELECT max(coalesce(l.lease_ms, greatest(q0.known, 0))) FROM {L} l
    WHERE l.owner <> '' AND l.transition_at > coalesce((
      SELECT max(x.transition_at - x.lease_ms) FROM {L} x
      WHERE x.transition_at - x.lease_ms < q0.started), 0)), )" +
         lease + R"() ELSE 0 END AS longest
  FROM q0),
q AS (
  SELECT run, lost, known, longest,
         CASE WHEN NOT )" +
         on + R"( THEN 0
              WHEN lost THEN greatest(coalesce(until_ms, 0), ms + longest + 1000)
              ELSE until_ms END AS till
  FROM q1))";
}

} // namespace simba::backend::pg
