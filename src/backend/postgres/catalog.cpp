// The catalog's view of simba's set-up (catalog.hpp).
#include "backend/postgres/catalog.hpp"

#include "backend/postgres/setup_sql.hpp"

namespace simba::backend::pg {

std::string missing_parts(Connection& conn, const PostgresUri& uri, int64_t deadline,
                          const std::string& fallback) {
  if (!conn.is_open()) return fallback;
  Result present = conn.query(k_columns_present, {uri.schema, uri.prefix}, deadline);
  if (!present.ok) return fallback;
  return describe_missing(required_tables(uri.schema, uri.prefix), present.rows);
}

std::string current_role(Connection& conn, int64_t deadline) {
  if (!conn.is_open()) return "";
  Result r = conn.query("SELECT current_user", {}, deadline);
  return r.ok && r.rows.size() == 1 && !r.rows[0].empty() ? r.rows[0][0] : "";
}

} // namespace simba::backend::pg
