#pragma once
// The SQL an administrator runs for a role that may not create simba's
// tables (docs/backends/postgres.md, man simba POSTGRESQL, and later
// `simba doctor --sql postgres`), and what simba needs of its tables: built
// from the very strings the backend executes (statements.hpp's
// create_schema and schema), so that the printed SQL cannot drift from
// the tables simba makes. tests/unit/test_backend_postgres_setup.cpp checks
// the man page's and the docs' copies against setup_sql().
#include "backend/uri.hpp"

#include <string>
#include <vector>

namespace simba::backend::pg {

// The privileges a simba role needs on each table: SELECT, INSERT and
// UPDATE on every one, DELETE too on the queue of waiters and the history
// (the statements delete from no other table; no sequence is used).
struct TableRights {
  const char* table;  // after the prefix: "leases"
  const char* rights; // "SELECT, INSERT, UPDATE"
};
const std::vector<TableRights>& table_rights();

// CREATE SCHEMA IF NOT EXISTS, the tables (statements.hpp's schema: CREATE
// TABLE / ALTER TABLE ... IF NOT EXISTS, so it also brings the tables of an
// older simba up to date), then the GRANTs `role` needs: USAGE on the
// schema and table_rights(). Every name quoted. For the defaults:
// setup_sql("public", "simba_", "simba").
std::string setup_sql(const std::string& schema, const std::string& prefix,
                      const std::string& role);

// The role a URI logs in as, as libpq picks it without a server: the URI's
// user (postgres://USER@...), else its ?user=, else $PGUSER, else the name
// of the user simba runs as.
std::string uri_role(const PostgresUri& uri);

// setup_sql() for `uri`'s schema, prefix and role (simba doctor --sql
// postgres with --backend).
inline std::string setup_sql(const PostgresUri& uri) {
  return setup_sql(uri.schema, uri.prefix, uri_role(uri));
}

// One table of the schema and the columns simba's statements need in it,
// as the schema's SQL makes them (unquoted names).
struct RequiredTable {
  std::string name; // "simba_leases"
  std::vector<std::string> columns;
};

// The tables and columns of statements.hpp's schema for `prefix` (its
// CREATE TABLEs' columns and its ALTERs' ADD COLUMNs), read from that SQL.
std::vector<RequiredTable> required_tables(const std::string& schema, const std::string& prefix);
// The same, of the schema's SQL `schema_sql`.
std::vector<RequiredTable> required_tables_in(const std::string& schema_sql);

// A statement that fails unless every table and column of `tables` (in
// `schema`) is there (statements.hpp's probe_schema): a read of every
// column (LIMIT 0: no row), which takes only the weakest lock, where the
// schema's ALTERs take an exclusive one even when there is nothing to add.
std::string probe_sql(const std::string& schema, const std::vector<RequiredTable>& tables);

// What of required_tables() is missing, given the columns the server has
// (rows of table name, column name; a table without columns has a row with
// an empty column): "" when nothing is, else e.g. `tables "p_history";
// columns "p_leases".losses, "p_leases".lease_ms`.
std::string describe_missing(const std::vector<RequiredTable>& required,
                             const std::vector<std::vector<std::string>>& present);

// The statement that lists the columns present: $1 schema, $2 prefix;
// rows of (table, column) as describe_missing() takes them.
extern const char* const k_columns_present;

} // namespace simba::backend::pg
