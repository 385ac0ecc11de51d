#pragma once
// The done records of --once-per (core/once_per.hpp): one row per mutex in
// the table simba_done, beside the lease table, made on the first
// --once-per use (a plain run never reads or writes it). The row is the
// mutex's last run: the next window's run replaces it, so it is kept for
// as long as it can matter, and never blocks the next window.
#include "core/once_per.hpp"

#include <optional>
#include <string>

namespace simba::backend::sqlite {

class Connection;

// CREATE TABLE IF NOT EXISTS; an SQLite code.
int ensure_done_table(Connection& db);

// The mutex's record into `out` (nullopt: none, or no table yet); an
// SQLite code.
int select_done(Connection& db, const std::string& mutex, std::optional<core::DoneRecord>& out);

// Writes (replaces) the mutex's record; an SQLite code.
int write_done(Connection& db, const std::string& mutex, const core::DoneRecord& r);

} // namespace simba::backend::sqlite
