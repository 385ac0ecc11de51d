#pragma once
// simba doctor on MySQL: the checks only this backend can make, on a
// connection of its own (backend.hpp: diagnose).
#include "backend/diagnosis.hpp"
#include "backend/uri.hpp"

namespace simba::backend::mysql {

// The server's version; simba's tables, or the right to make them; a
// read-only server (a replica); the durability of its writes and the
// binary log; the isolation level and the clock (for the record: simba
// sets its own); the named lock of the hand-over.
void diagnose(const MysqlUri& uri, Diagnosis& found, const DiagnoseOptions& options);

// What a user that may not create simba's tables is told to have an
// administrator run: `simba doctor --sql mysql --backend '<URI>'`, the URI
// without its password and with what the SQL depends on (user, database,
// prefix). Not the SQL itself: an error line is cut past 4 KiB, and the
// SQL of a long prefix is longer.
std::string setup_command(const MysqlUri& uri);

} // namespace simba::backend::mysql
