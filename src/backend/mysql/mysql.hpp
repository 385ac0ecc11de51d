#pragma once
// backend/mysql/: the MySQL and MariaDB backend, a lease table on a
// database many hosts share, on the server's clock
// (docs/backends/mysql.md). simba speaks the protocol itself: no
// libmariadb, no libmysqlclient. Its units: README.md.
#include "backend/backend.hpp"
#include "backend/uri.hpp"

#include <memory>

namespace simba::backend {

// Connects to the server of `uri` (uri.hpp). simba's tables are found by
// the first statement, and created (with `use`) when missing. Throws
// UnavailableError when the server cannot be reached or refuses; the first
// statement throws it when the tables are missing and cannot be made
// (naming the command that prints the SQL an administrator runs).
std::unique_ptr<Backend> open_mysql(MysqlUri uri, Access access);

// The SQL an administrator runs for a user that may not create tables:
// the tables of `prefix` and the GRANTs `user` needs on them in `database`.
std::string mysql_setup_sql(const std::string& database, const std::string& prefix,
                            const std::string& user);

} // namespace simba::backend
