#pragma once
// --slots N in a listing (core/slots.hpp): the backends that store each
// slot as a row of its own ("m#k": SQLite, PostgreSQL) list those rows
// beside their mutex's; status shows a mutex, with its slots.
#include "backend/backend.hpp"

#include <vector>

namespace simba::backend {

// A listing's rows of slots ("m#k", sorted by name right after the row of
// "m", as '#' sorts before every character of a mutex name) moved into
// their mutex's MutexLease::slots, by number, their counters added to the
// mutex's; rows of a mutex whose lease
// is no marker of slots are dropped.
void group_slot_rows(std::vector<MutexLease>& mutexes);

} // namespace simba::backend
