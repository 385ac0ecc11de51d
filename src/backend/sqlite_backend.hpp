#pragma once
// The SQLite backend (DESIGN §5.1): one database file on one host. The class
// itself is private to sqlite_backend.cpp; open_backend() reaches it through
// this factory.
#include "backend/backend.hpp"

#include <memory>
#include <string>

namespace simba::backend {

// Opens (creating if missing: directory 0700, file 0600) the database at
// `path` (absolute or relative to the cwd). `uri_for_messages` is how the
// user named it, for error messages. Throws UnavailableError when the
// database cannot be used (unwritable directory, not a SQLite database,
// network filesystem, read-only).
std::unique_ptr<Backend> open_sqlite(const std::string& path, const std::string& uri_for_messages);

} // namespace simba::backend
