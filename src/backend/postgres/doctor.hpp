#pragma once
// simba doctor's checks of a PostgreSQL backend (backend/diagnosis.hpp),
// each on connections of its own:
//
//   server-version  the major version: older than simba's SQL needs: fail
//   role-rights     USAGE on the schema, each table's rights (setup_sql.hpp),
//                   or CREATE where tables are missing: fail with the GRANT
//   tables          every table and column simba needs (setup_sql.hpp's
//                   required_tables()): fail naming what is missing
//   listen          a NOTIFY reaches a LISTENing session (not through
//                   PgBouncer in transaction mode: warn)
#include "backend/diagnosis.hpp"
#include "backend/uri.hpp"

namespace simba::backend::pg {

void diagnose(const PostgresUri& uri, Diagnosis& found, const DiagnoseOptions& options);

} // namespace simba::backend::pg
