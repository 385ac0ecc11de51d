#pragma once
// The done records of --once-per (core/once_per.hpp), and the last run of
// a schedule (core/schedule_phase.hpp): one row per mutex in
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

// schedule: the start of the mutex's last run (backend clock), in the same
// table's sibling simba_last_run, made on first use too.
int ensure_last_run_table(Connection& db);
int select_last_run(Connection& db, const std::string& mutex, std::optional<int64_t>& out);
int write_last_run(Connection& db, const std::string& mutex, int64_t at);

} // namespace simba::backend::sqlite
