#pragma once
// The SQLite backend (DESIGN §5.1): one database file on one host. The class
// itself is private to sqlite_backend.cpp; open_backend() reaches it through
// this factory.
#include "backend/backend.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace simba::backend {

// Opens (creating if missing: directory 0700, file 0600) the database at
// `path` (absolute or relative to the cwd). `uri_for_messages` is how the
// user named it, for error messages. Throws UnavailableError when the
// database cannot be used (unwritable directory, not a SQLite database,
// network filesystem, read-only).
std::unique_ptr<Backend> open_sqlite(const std::string& path, const std::string& uri_for_messages);

namespace testing {
// Tests only: SQLite connections opened from now on see the wall clock
// shifted by `ms` (the system clock as after a step); the shift may be
// changed again at any time. SIMBA_TEST_WALL_CLOCK_SHIFT_MS does the same
// for a whole simba process.
void shift_sqlite_wall_clock(int64_t ms);
} // namespace testing

} // namespace simba::backend
