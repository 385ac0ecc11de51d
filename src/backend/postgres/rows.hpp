#pragma once
// The rows of simba's statements, read into what the Backend answers: a
// lease and a done record (statements.hpp's answer), status's listing and
// history's events (status_sql.hpp). Every column comes as text (libpq's
// text format).
#include "backend/backend.hpp"
#include "core/lease.hpp"
#include "core/once_per.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace simba::backend::pg {

using Row = std::vector<std::string>;

int64_t number(const std::string& s);

// A row of statements.hpp's answer, from column `at` on.
core::Lease read_lease(const Row& row, size_t at);

// The done record's columns (statements.hpp), from column `at` on.
constexpr size_t k_done_columns = 10;
core::DoneRecord read_done(const Row& row, size_t at);

// A free mutex during a quarantine that lasts until `till` is shown as one
// that ends then (as redis/lua/common.lua's quarantined()): waiters sleep
// until it does.
void show_quarantine(core::Lease& l, int64_t now, int64_t till);

// status: the leases with their holders, then each one's live waiters in
// queue order (status_sql.hpp's inspect), for `mutex` ("" every one).
Listing read_listing(const std::vector<Row>& rows, const std::string& mutex);

// history: the events, oldest first (status_sql.hpp's history).
History read_history(const std::vector<Row>& rows);

} // namespace simba::backend::pg
