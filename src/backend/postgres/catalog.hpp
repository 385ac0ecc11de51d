#pragma once
// What the server's catalog says of simba's set-up, read on the paths
// where something is wrong (the tables' first use failed, simba doctor):
// never on the way of a lease.
#include "backend/postgres/connection.hpp"
#include "backend/uri.hpp"

#include <cstdint>
#include <string>

namespace simba::backend::pg {

// The tables and columns of setup_sql.hpp's required_tables() that the
// schema of `uri` lacks ("" none; describe_missing()'s words), or, when the
// catalog cannot be read, `fallback`.
std::string missing_parts(Connection& conn, const PostgresUri& uri, int64_t deadline,
                          const std::string& fallback);

// The role this connection acts as (current_user); "" when unknown.
std::string current_role(Connection& conn, int64_t deadline);

} // namespace simba::backend::pg
