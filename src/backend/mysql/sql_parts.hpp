#pragma once
// The fragments the MySQL statements share (statements.cpp, slots_sql.cpp).
#include "backend/mysql/statements.hpp"

#include <cstdint>
#include <string>

namespace simba::backend::mysql {

// What every write query begins with: the session's clock zone and the
// isolation level set by the query itself, the transaction (3 statements).
extern const char* const k_begin;

// How many statements Statements::quarantine_sql is.
constexpr int k_quarantine_statements = 6;

// The touch's notes of the lease as it was (was_*, wrote and gate_till
// reset), assignments.
std::string was_columns();

// The call's clock, as the touch noted it in the row: "(now_us DIV 1000)".
std::string n();
std::string num(int64_t v);
std::string unum(uint64_t v);
// A live waiter of the queue, the row of alias `z` (statements.cpp).
std::string live_waiter(const std::string& z, const std::string& now);
// The connection `conn` (an SQL expression: a waiter's conn_id) is there:
// it holds its liveness lock (statements.cpp, Statements::enqueue).
std::string conn_alive(const std::string& conn);

// An UPDATE that renews the lease of the row `where` selects: `target`
// follows UPDATE (the table, or a join whose written row has the alias
// prefix `p`, e.g. "s.").
std::string renew_sql(const std::string& target, const Call& c, const std::string& where,
                      const std::string& p);
// An UPDATE that takes a new lease with token `token` on the row `where`
// selects (the counters and the history's count too).
std::string take_sql(const std::string& target, const Call& c, const std::string& where,
                     const std::string& p, const std::string& token);

} // namespace simba::backend::mysql
