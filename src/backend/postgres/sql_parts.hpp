#pragma once
// The fragments the statements of statements.cpp and slots_sql.cpp share,
// so that they stay alike: the server's clock, the quarantine, and the
// answer row of statements.hpp. Internal to backend/postgres/.
#include <string>

namespace simba::backend::pg {

// The CTE n: the server's clock read once (clock_timestamp(): now() stands
// still for the transaction): ms (lease times), us (token seeds), and run
// (the server run, pg_postmaster_start_time()).
extern const char* const k_now;

// The CTEs m, q0, q1 and q (quarantine_sql.cpp): the quarantine for a
// lease of `lease` ms (an SQL expression), `on` an SQL boolean: q.till (0:
// none), q.longest (its length), and whether the marker is to be written
// (q.lost: another run, or no marker).
std::string quarantine(const std::string& lease, const std::string& on);

// The lease columns of the table, in the answer's order.
extern const char* const k_fields;

// The answer row (statements.hpp): the lease written by the CTE `up`, or
// else the row of $1 as it stands. `with_quarantine`: the CTE q's till,
// else 0. `notify`: an SQL expression for the channel NOTIFYed when `up`
// changed the lease (at commit: the waiters look once it is visible); ""
// none. `extra`: more columns (of r: then with `once`, the done record's).
// `fifo`: acquire's and acquire_once's, with the CTE fg (statements.cpp:
// fifo_gate).
std::string answer(bool with_quarantine, const std::string& notify = "", const char* extra = "",
                   bool once = false, bool fifo = false);

} // namespace simba::backend::pg
