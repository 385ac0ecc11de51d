#pragma once
// A row of the lease table <-> a Lease on this boot's CLOCK_BOOTTIME, the
// clock every decision uses; and a Lease moved onto the wall clock, as
// replies and the wall-clock columns give it (schema.hpp has the columns,
// clocks.hpp the two clocks).
#include "backend/sqlite/clocks.hpp"
#include "core/lease.hpp"

#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace simba::backend::sqlite {

class Connection;

// One row of simba_mutex as stored.
struct Row {
  bool exists = false;
  core::Lease wall; // the wall-clock columns
  std::string boot_id;
  int64_t boot_acquired_at = 0, boot_ttl_at = 0, boot_transition_at = 0;
  bool boot_stamped = false; // boot_ columns written with this row's token
  // select_row only (schema.hpp: the columns; NULL read as 0):
  int64_t history_seq = 0;  // history events written for it
  int64_t acquisitions = 0; // its counters (backend.hpp: MutexLease)
  int64_t losses = 0;
  uint64_t lost_token = 0; // the last standing lease whose loss a lost event counted
};

// What write_row writes besides the lease: the row's event count and
// counters, as the transaction computed them from its Row.
struct RowCounts {
  int64_t history_seq = 0;
  int64_t acquisitions = 0;
  int64_t losses = 0;
  uint64_t lost_token = 0;
};

// The row whose SIMBA_SQL_ROW columns start at column `first` of `s`.
Row read_row(sqlite3_stmt* s, int first);

// The holder (holder.hpp) stored in the row at `first` for the lease with
// fencing token `token`; "" when none is (status only: not read by the
// operations, which have no use for it).
std::string read_holder(sqlite3_stmt* s, int first, uint64_t token);

// Reads the mutex's row into `row` (exists = false: none); an SQLite code.
int select_row(Connection& db, const std::string& mutex, Row& row);

// Writes `l` (on the boot clock) on both clocks, stamped with our boot; an
// SQLite code.
// `holder` (encoded: holder.hpp) is written as the holder of this lease's
// token, `counts` as the row's count of history events and its counters;
// nullptr keeps the stored ones.
int write_row(Connection& db, const std::string& mutex, const core::Lease& l, int64_t boot_to_wall,
              const std::string* holder = nullptr, const RowCounts* counts = nullptr);

// The counters of the row that `s` read at `first` with the list
// statements (schema.hpp: k_counters_column): acquisitions, losses.
void read_counters(sqlite3_stmt* s, int first, int64_t& acquisitions, int64_t& losses);

// The stored lease on this boot's boot clock, at the instant `c`.
core::Lease lease_of(const Row& row, const Clocks& c);

// A lease on the boot clock as replies and the wall-clock columns give it:
// moved by `boot_to_wall` (wall minus boot clock), so that every distance
// from `now` is the boot clock's. Every delay is computed from differences
// with the reply's `now` (DESIGN §3), so the contend logic sees exactly the
// boot clock; status and SIMBA_ACQUIRED_AT see calendar times.
inline core::Lease on_wall_clock(core::Lease l, int64_t boot_to_wall) {
  l.acquired_at += boot_to_wall;
  l.ttl_at += boot_to_wall;
  l.transition_at += boot_to_wall;
  return l;
}

} // namespace simba::backend::sqlite
