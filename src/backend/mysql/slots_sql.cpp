// The SQL of --slots N on MySQL (core/slots.hpp: slot k of mutex m is the
// lease row "m#k", the row "m" is the marker, owner "#slots:N", valid
// while any slot is). The rules are those of postgres/slots_sql.cpp and
// sqlite/slot_rows.cpp (keep them alike): the slot the contender holds is
// renewed, else a free one is taken (the first by number) with a token
// above the marker's and every slot's, else the slot that frees first is
// answered; a marker of another N, or a plain holder, refuses; the marker
// ends with the last slot that is not free (to now when every slot is).
//
// Every query on a mutex's slots locks its marker row first: the
// marker's lock orders all the writers of one mutex's slots (and the
// locks are always taken marker first, then slot rows: no deadlock), so
// each query decides on every slot as it stands. The decision is noted in
// the marker's row (slot_act, slot_pick, slot_token), as once_case is for
// --once-per.
#include "backend/mysql/packets.hpp"
#include "backend/mysql/sql_parts.hpp"
#include "backend/mysql/statements.hpp"
#include "core/slots.hpp"

namespace simba::backend::mysql {
namespace {

// Where statement `i` of `sql` begins (0-based; hex literals hold no ';').
size_t statement_start(const std::string& sql, int i) {
  size_t at = 0;
  for (int k = 0; k < i; ++k) at = sql.find(';', at) + 1;
  return at;
}

// The rows of slots 0..n-1 of `mutex`, an SQL list.
std::string slot_list(const std::string& mutex, int slots) {
  std::string out = "(";
  for (int k = 0; k < slots; ++k)
    out += (k ? ", " : "") + wire::hex_literal(core::slot_row(mutex, k));
  return out + ")";
}

// Every slot row of `mutex` (a range of the key: "m#" < "m#..." < "m$").
std::string slot_range(const std::string& column, const std::string& mutex) {
  return column + " > " + wire::hex_literal(mutex + "#") + " AND " + column + " < " +
         wire::hex_literal(mutex + "$");
}

// The slot number of a row's name (SQL).
std::string slot_number(const std::string& column, const std::string& mutex) {
  return "CAST(SUBSTRING(" + column + ", " + num(static_cast<int64_t>(mutex.size()) + 2) +
         ") AS UNSIGNED)";
}

// The N a marker's owner records (core::slots_of_owner).
std::string slots_of(const std::string& owner) {
  return "IF(" + owner + " = '', 0, IF(" + owner + " LIKE '#slots:%', GREATEST(CAST(SUBSTRING(" +
         owner + ", 8) AS UNSIGNED), 1), 1))";
}

// The marker over the slots after a write: ended with the last slot that
// is not free, to now when every slot is. `when`: the condition on d and mk.
std::string cover_sql(const std::string& leases, const std::string& marker,
                      const std::string& mutex, const std::string& written,
                      const std::string& set_more, const std::string& when) {
  const std::string nm = "(SELECT now_us DIV 1000 FROM " + leases + " WHERE mutex = " + marker +
                         ")";
  const std::string now = "(mk.now_us DIV 1000)";
  return "UPDATE " + leases + " mk JOIN (SELECT MAX(IF(transition_at > " + nm +
         ", ttl_at, NULL)) AS t, MAX(IF(transition_at > " + nm +
         ", transition_at, NULL)) AS tr, MAX(token) AS top, MAX(IF(" + written +
         ", wrote, 0)) AS w FROM " + leases + " WHERE " + slot_range("mutex", mutex) +
         ") d SET " + set_more + "mk.ttl_at = GREATEST(" + now + ", COALESCE(d.t, " + now +
         ")), mk.transition_at = GREATEST(" + now + ", COALESCE(d.tr, " + now +
         ")), mk.holding = 0 WHERE mk.mutex = " + marker + " AND " + when;
}

// First come, first served (core/slots.hpp, may_take_free_slot): how
// many live waiters queued before the contender hold no slot (SQL).
std::string slot_queue_ahead(const std::string& leases, const std::string& waiters,
                             const Call& c, const std::string& list) {
  const std::string marker = c.mutex;
  const std::string nm = "(SELECT now_us DIV 1000 FROM " + leases + " WHERE mutex = " + marker +
                         ")";
  return "(SELECT COUNT(*) FROM " + waiters + " z WHERE z.mutex = " + marker +
         " AND z.contender <> " + c.contender +
         " AND z.queued_at < COALESCE((SELECT y.queued_at FROM " + waiters +
         " y WHERE y.mutex = " + marker + " AND y.contender = " + c.contender +
         "), 9223372036854775807) AND " + live_waiter("z", nm) + " AND NOT EXISTS (SELECT 1 FROM " +
         leases + " h WHERE h.mutex IN " + list + " AND h.owner = z.contender AND h.transition_at > " +
         nm + "))";
}

// The slots as the decision reads them (the derived table d): the
// contender's (mine), the first free (free_k), how many are free since
// when, the top token, the waiters ahead.
std::string slots_state(const std::string& leases, const std::string& waiters, const Call& c,
                        const std::string& mutex, const std::string& list) {
  const std::string sn = "(now_us DIV 1000)";
  return "(SELECT MIN(IF(owner = " + c.contender + " AND transition_at > " + sn +
         ", k, NULL)) AS mine, MIN(IF(transition_at <= " + sn +
         ", k, NULL)) AS free_k, SUM(transition_at <= " + sn +
         ") AS free_n, MIN(IF(transition_at <= " + sn +
         ", transition_at, NULL)) AS free_since, MAX(token) AS top, MAX(" +
         slot_queue_ahead(leases, waiters, c, list) + ") AS ahead FROM (SELECT " +
         slot_number("mutex", mutex) + " AS k, owner, transition_at, now_us, token FROM " +
         leases + " WHERE mutex IN " + list + ") x) d";
}

} // namespace

// The decision (slot_act): 3 refused (a valid marker of another N, or a
// plain holder), 4 a revoked plain lease (busy), 1 the contender's slot is
// renewed, 5 the free slots are the waiters' ahead (FIFO), 2 a free slot
// is taken, 0 every slot is held.
Query Statements::acquire_slot(const Call& c, const std::string& mutex, int slots) const {
  const std::string list = slot_list(mutex, slots);
  const std::string marker = c.mutex;
  const std::string N = "(mk.now_us DIV 1000)";
  const std::string own = wire::hex_literal(core::slot_marker(slots));
  std::string ensure;
  for (int k = 0; k < slots; ++k)
    ensure += (k ? ", " : "") + ("(" + wire::hex_literal(core::slot_row(mutex, k)) + ")");
  ensure = "INSERT INTO " + m_leases + " (mutex) VALUES " + ensure +
           " ON DUPLICATE KEY UPDATE mutex = mutex";
  std::string touch_slots =
      "UPDATE " + m_leases + " s JOIN " + m_leases + " mk ON mk.mutex = " + marker +
      " SET s.now_us = mk.now_us, s.wrote = 0, s.was_owner = s.owner, s.was_acquired_at = "
      "s.acquired_at, s.was_ttl_at = s.ttl_at, s.was_transition_at = s.transition_at, "
      "s.was_token = s.token, s.was_holding = s.holding WHERE s.mutex IN " + list;
  // With F slots free, F waiters ahead keep the contender out until a
  // slot has been free for k_slot_fallback_ms (act 5: busy till then,
  // gate_till).
  const std::string gated = "(d.mine IS NULL AND d.free_k IS NOT NULL AND " + N +
                            " < d.free_since + " + num(core::k_slot_fallback_ms) +
                            " AND d.ahead >= d.free_n)";
  std::string decide =
      "UPDATE " + m_leases + " mk JOIN " + slots_state(m_leases, m_waiters, c, mutex, list) +
      " SET mk.slot_act = CASE WHEN mk.transition_at > " + N +
      " AND mk.owner <> '' AND mk.owner <> " + own + " THEN 3 WHEN mk.owner = '' AND "
      "mk.transition_at > " + N + " THEN 4 WHEN d.mine IS NOT NULL THEN 1 WHEN " + gated +
      " THEN 5 WHEN d.free_k IS NOT NULL AND " + N +
      " >= mk.q_till THEN 2 ELSE 0 END, mk.gate_till = IF(" + gated + ", d.free_since + " +
      num(core::k_slot_fallback_ms) +
      ", 0), mk.slot_pick = COALESCE(d.mine, d.free_k, -1), mk.slot_token = "
      "GREATEST(COALESCE(d.top, 0), mk.token) WHERE mk.mutex = " + marker;
  const std::string join = m_leases + " s JOIN " + m_leases + " mk ON mk.mutex = " + marker;
  const std::string picked = "s.mutex = CONCAT(" + marker + ", '#', mk.slot_pick)";
  std::string renew = renew_sql(join, c, picked + " AND mk.slot_act = 1", "s.");
  std::string take = take_sql(join, c, picked + " AND mk.slot_act = 2", "s.",
                              "GREATEST(mk.slot_token + 1, s.now_us)");
  std::string cover = cover_sql(
      m_leases, marker, mutex, "1",
      "mk.owner = " + own + ", mk.acquired_at = IF(mk.was_transition_at <= " + N +
          " OR mk.was_owner <> " + own + ", " + N +
          ", mk.acquired_at), mk.token = GREATEST(mk.token, COALESCE(d.top, 0)), ",
      "mk.slot_act IN (1, 2)");
  std::string body = ensure + ";" + touch_slots + ";" + decide + ";" + renew + ";" + take + ";" +
                     cover;
  if (c.quarantine) body = quarantine_sql(marker, c.ttl_ms + c.transition_ms) + ";" + body;
  std::string events =
      "SELECT mutex, history_seq - 1, was_transition_at, 'expired', was_owner, NULL, was_token, "
      "NULL, was_transition_at - was_acquired_at, NULL, NULL, NULL FROM " + m_leases +
      " WHERE mutex IN " + list + " AND wrote = 1 AND token <> was_token AND was_owner <> '' "
      "UNION ALL SELECT mutex, history_seq, " + n() + ", 'acquired', owner, holder, token, NULL, "
      "NULL, 0, NULL, NULL FROM " + m_leases + " WHERE mutex IN " + list +
      " AND wrote = 1 AND token <> was_token";
  // The answer: the slot written, else the one that frees first; the
  // marker when it refuses.
  // Act 5 (gated): the marker, busy until the gate opens.
  auto col = [](const std::string& name) {
    const std::string gate = name == "ttl_at"          ? "LEAST(mk.ttl_at, mk.gate_till)"
                             : name == "transition_at" ? "mk.gate_till"
                                                       : "mk." + name;
    return "IF(mk.slot_act IN (3, 4), mk." + name + ", IF(mk.slot_act = 5, " + gate + ", s." +
           name + "))";
  };
  std::string answer =
      ", " + slot_number("s.mutex", mutex) + ", IF(mk.slot_act = 3, " + slots_of("mk.owner") +
      ", 0)";
  Query q = wrap(marker, body, 6 + (c.quarantine ? k_quarantine_statements : 0), events, answer);
  // The answer of wrap reads the marker's row: it reads the slot's here.
  size_t select = q.sql.rfind(";SELECT COALESCE(l.now_us");
  q.sql.replace(select + 1, std::string::npos,
                "SELECT mk.now_us DIV 1000, IF(mk.slot_act IN (1, 2), 1, 0), " + col("owner") +
                    ", " + col("acquired_at") + ", " + col("ttl_at") + ", " +
                    col("transition_at") + ", " + col("token") + ", " + col("holding") + answer +
                    ", mk.q_till FROM " + m_leases + " mk JOIN " + m_leases + " s ON s.mutex IN " +
                    list +
                    " WHERE mk.mutex = " + marker + " ORDER BY (" + picked +
                    ") DESC, s.transition_at, s.mutex LIMIT 1;COMMIT");
  return creating(marker, q);
}

// A plain statement on a slot's row ("m#k"): the marker locked first, and
// moved over the slots after the write (only when the slot was written).
Query Statements::on_slot_row(Query q, const std::string& row) const {
  const std::string mutex(core::mutex_of_row(row));
  const std::string marker = wire::hex_literal(mutex);
  const std::string lock = "UPDATE " + m_leases + " SET now_us = " + k_now_us +
                           " WHERE mutex = " + marker + ";";
  std::string cover = cover_sql(m_leases, marker, mutex, "mutex = " + wire::hex_literal(row), "",
                                "d.w = 1 AND mk.owner LIKE '#slots:%'") +
                      ";";
  // Statement 3 is the touch of the slot's row, 4 its write.
  q.sql.insert(statement_start(q.sql, 5), cover);
  q.sql.insert(statement_start(q.sql, 3), lock);
  q.answer += 2;
  if (q.hint_holder != 0) q.hint_holder += 2;
  return q;
}

} // namespace simba::backend::mysql
