// A table row <-> a Lease (lease_row.hpp).
#include "backend/sqlite/lease_row.hpp"

#include "backend/sqlite/connection.hpp"
#include "backend/sqlite/schema.hpp"

#include <algorithm>

namespace simba::backend::sqlite {

Row read_row(sqlite3_stmt* s, int first) {
  Row row;
  row.exists = true;
  core::Lease& l = row.wall;
  l.owner_id = column_text(s, first);
  l.acquired_at = sqlite3_column_int64(s, first + 1);
  l.ttl_at = sqlite3_column_int64(s, first + 2);
  l.transition_at = sqlite3_column_int64(s, first + 3);
  l.fencing_token = static_cast<uint64_t>(sqlite3_column_int64(s, first + 4));
  row.boot_id = column_text(s, first + 5);
  row.boot_acquired_at = sqlite3_column_int64(s, first + 6);
  row.boot_ttl_at = sqlite3_column_int64(s, first + 7);
  row.boot_transition_at = sqlite3_column_int64(s, first + 8);
  row.boot_stamped = sqlite3_column_type(s, first + 9) != SQLITE_NULL &&
                     static_cast<uint64_t>(sqlite3_column_int64(s, first + 9)) == l.fencing_token;
  // An older simba that took the mutex since leaves the column as it was.
  l.holding = row.boot_stamped && sqlite3_column_int64(s, first + 10) != 0;
  return row;
}

std::string read_holder(sqlite3_stmt* s, int first, uint64_t token) {
  int h = first + k_holder_column;
  if (sqlite3_column_type(s, h + 1) == SQLITE_NULL ||
      static_cast<uint64_t>(sqlite3_column_int64(s, h + 1)) != token)
    return "";
  return column_text(s, h);
}

int select_row(Connection& db, const std::string& mutex, Row& row) {
  sqlite3_stmt* s = db.stmt(k_select, k_sql_select);
  if (!s) return sqlite3_errcode(db.db());
  sqlite3_bind_text(s, 1, mutex.data(), static_cast<int>(mutex.size()), SQLITE_TRANSIENT);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    row = read_row(s, 0);
    row.history_seq = sqlite3_column_int64(s, k_history_seq_column); // NULL: 0
    row.acquisitions = sqlite3_column_int64(s, k_history_seq_column + 1);
    row.losses = sqlite3_column_int64(s, k_history_seq_column + 2);
    row.lost_token = static_cast<uint64_t>(sqlite3_column_int64(s, k_history_seq_column + 3));
  }
  sqlite3_reset(s);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

void read_counters(sqlite3_stmt* s, int first, int64_t& acquisitions, int64_t& losses) {
  acquisitions = sqlite3_column_int64(s, first + k_counters_column); // NULL: 0
  losses = sqlite3_column_int64(s, first + k_counters_column + 1);
}

int write_row(Connection& db, const std::string& mutex, const core::Lease& l, int64_t boot_to_wall,
              const std::string* holder, const RowCounts* counts) {
  sqlite3_stmt* u = db.stmt(k_upsert, k_sql_upsert);
  if (!u) return sqlite3_errcode(db.db());
  core::Lease wall = on_wall_clock(l, boot_to_wall);
  const std::string& boot = boot_id();
  auto token = static_cast<sqlite3_int64>(l.fencing_token);
  sqlite3_bind_text(u, 1, mutex.data(), static_cast<int>(mutex.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(u, 2, l.owner_id.data(), static_cast<int>(l.owner_id.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int64(u, 3, wall.acquired_at);
  sqlite3_bind_int64(u, 4, wall.ttl_at);
  sqlite3_bind_int64(u, 5, wall.transition_at);
  sqlite3_bind_int64(u, 6, token);
  sqlite3_bind_text(u, 7, boot.data(), static_cast<int>(boot.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int64(u, 8, l.acquired_at);
  sqlite3_bind_int64(u, 9, l.ttl_at);
  sqlite3_bind_int64(u, 10, l.transition_at);
  sqlite3_bind_int64(u, 11, token);
  sqlite3_bind_int(u, 12, l.holding ? 1 : 0);
  // Bindings outlive a reset: NULL when not given.
  if (holder) {
    sqlite3_bind_text(u, 13, holder->data(), static_cast<int>(holder->size()), SQLITE_STATIC);
    sqlite3_bind_int64(u, 14, token);
  } else {
    sqlite3_bind_null(u, 13);
    sqlite3_bind_null(u, 14);
  }
  if (counts) {
    sqlite3_bind_int64(u, 15, counts->history_seq);
    sqlite3_bind_int64(u, 16, counts->acquisitions);
    sqlite3_bind_int64(u, 17, counts->losses);
    sqlite3_bind_int64(u, 18, static_cast<sqlite3_int64>(counts->lost_token));
  } else {
    for (int i = 15; i <= 18; ++i) sqlite3_bind_null(u, i);
  }
  int rc = sqlite3_step(u);
  sqlite3_reset(u);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

// * stamped by this boot: its boot_ columns;
// * stamped by an earlier boot: over (ttl_at and transition_at now at the
//   latest), whatever its times said;
// * not stamped (last written by a simba of the first wave, which times
//   leases on the wall clock and may still be running during an upgrade):
//   judged on the wall clock, as its writer judges it; its wall times are
//   moved onto the boot clock at this operation's instant. Such a row is
//   exposed to wall-clock steps as before; the first write by this simba
//   stamps it.
core::Lease lease_of(const Row& row, const Clocks& c) {
  core::Lease l = row.wall;
  if (!row.exists) return l;
  if (row.boot_stamped && row.boot_id == boot_id()) {
    l.acquired_at = row.boot_acquired_at;
    l.ttl_at = row.boot_ttl_at;
    l.transition_at = row.boot_transition_at;
    return l;
  }
  l.acquired_at = c.boot + (row.wall.acquired_at - c.wall);
  l.ttl_at = c.boot + (row.wall.ttl_at - c.wall);
  l.transition_at = c.boot + (row.wall.transition_at - c.wall);
  if (row.boot_stamped) { // an earlier boot
    l.ttl_at = std::min(l.ttl_at, c.boot);
    l.transition_at = std::min(l.transition_at, c.boot);
  }
  return l;
}

} // namespace simba::backend::sqlite
