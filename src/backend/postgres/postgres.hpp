#pragma once
// backend/postgres/: the PostgreSQL backend, a lease table on a database
// many hosts share, on the server's clock (docs/backends/postgres.md). simba speaks
// the protocol itself: no libpq.
//
//   postgres.hpp     this factory, all that open_backend() sees
//   backend.cpp      the Backend: one statement per operation, the replies
//   rows.*           the statements' rows read: leases, done records, status, history
//   statements.*     the SQL: the schema, the statements
//   setup_sql.*      the administrator's SQL (the schema and the GRANTs), the tables simba needs
//   catalog.*        what the catalog says is missing, the role (on the paths of an error)
//   doctor.*         simba doctor's checks: version, rights, tables, LISTEN
//   quarantine_sql.cpp  the server run and its quarantine (sql_parts.hpp)
//   slots_sql.*      the SQL of --slots N: the slots' rows and their marker
//   sql_parts.hpp    the fragments those share (the clock, the answer)
//   status_sql.*     the SQL of status and history: holders, waiters, events
//   connection*      one connection with deadlines: queries, notifications
//                    (.cpp), start-up and sslmode (_startup), authentication (_auth)
//   wire.*           the protocol 3.0's messages as bytes
//   conninfo*        the URI and libpq's environment read as libpq reads them
//   pgpass.*         the password file (~/.pgpass) and its permission rule
//   md5.*            MD5, for the md5 password method only
//   wakeups.*        LISTEN/NOTIFY and the FIFO queue of waiters
//   scram.*          SCRAM-SHA-256's client side, no I/O (RFC 5802, RFC 7677)
//   scram_cache.*    the per-user cache of SCRAM's keys (PBKDF2 done once per password)
//   sha256.*         SHA-256 and HMAC-SHA-256 of simba's own, for SCRAM
//   base64.*         base64, as SCRAM writes salts, proofs and signatures
//
// The done records of --once-per and schedule's last run are columns of the
// lease's row (statements.cpp).
#include "backend/backend.hpp"
#include "backend/uri.hpp"

#include <memory>

namespace simba::backend {

// Connects to the server of `uri` (uri.hpp). simba's tables are found by
// the first statement, and created (with `use`) when missing. Throws
// UnavailableError when the server cannot be reached or
// refuses; the first statement throws it when the tables are missing and
// cannot be made (naming the SQL an administrator may run).
std::unique_ptr<Backend> open_postgres(PostgresUri uri, Access access);

} // namespace simba::backend
