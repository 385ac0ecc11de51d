#pragma once
// backend/sqlite/: the SQLite backend (DESIGN §5.1). Leases live in one table
// of a database file on one host; releases wake waiters through inotify on
// files in a directory beside it. open_backend() reaches it through
// open_sqlite() below; everything else in the folder is private to it:
//   sqlite_backend.cpp  the Backend: each operation as one write transaction,
//                       and opening the path again when the file was replaced
//   backend_class.hpp   the Backend's class, for the three files of its members
//   backend_once_slots.cpp  its --slots, --once-per and schedule's mark
//   backend_status.cpp  its status and history reads, the lost event
//   lease_rules         what acquire, guard, hold, extend, release, force_release decide
//   lease_row           a table row <-> a Lease (boot clock and wall clock)
//   slot_rows           --slots: a mutex's slot rows, picking one, its marker
//   clocks              the two clocks of an operation, the boot id
//   done_records        --once-per: the table of done records (one row per mutex)
//   history_events      simba history: which events a write makes
//   history_table       simba history: the ring of events per lease row
//   schema              the table, its statements, creating and migrating it
//   connection          the SQLite connection: settings, busy handler,
//                       statement cache, the WAL checkpoint policy
//   database_files      the open path: directory, file, -wal/-shm, network
//                       filesystems, symlinks, permission messages
//   trust               whose files we trust (pure rules on a stat)
//   sqlite_doctor.cpp   simba doctor: the facts its checks judge (Backend::diagnose)
//   doctor_checks       simba doctor: file system, modes, inotify, judged (pure)
//   waiters             the waiter queue and release notification (inotify)
#include "backend/backend.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace simba::backend {

// What opening may do (backend.hpp, Access).
struct SqliteOpen {
  bool create_directories = false; // mkdir -p the directory (0700): the default location only
  bool create_file = false;        // create a missing database (0600; 0660 in a shared directory)
  bool read_only_ok = false;       // a database we may only read is opened read-only (status)
};

// Opens the database at `path` (absolute or relative to the cwd). Throws
// UnavailableError when the database cannot be used: missing (and not to be
// created), its directory missing, a directory or file another user could
// have written (docs/backends/sqlite.md "Sharing a database between users"), a symlink, not
// a SQLite database, a network filesystem, no permission.
std::unique_ptr<Backend> open_sqlite(const std::string& path, const SqliteOpen& how);

namespace testing {
// Tests only: SQLite connections opened from now on see the wall clock
// shifted by `ms` (the system clock as after a step); the shift may be
// changed again at any time. SIMBA_TEST_WALL_CLOCK_SHIFT_MS does the same
// for a whole simba process.
void shift_sqlite_wall_clock(int64_t ms);
} // namespace testing

} // namespace simba::backend
