#pragma once
// The SQL of --slots N on PostgreSQL (core/slots.hpp: slot k of mutex m is
// the lease row "m#k", the row "m" is the marker, owner "#slots:N", valid
// while any slot is). Each operation is one statement, its own
// transaction, as in statements.hpp; its answer row has three columns more
// than statements.hpp's nine:
//
//   ..., quarantine_till, slot, slots_recorded, retry
//
// How the statements stay consistent under READ COMMITTED, where one
// statement reads every row from the snapshot it started with and only the
// rows it writes from their newest version: every statement that writes a
// slot row of m writes m's marker row too, first, by an UPDATE that
// requires the marker's xmin to be the one of its snapshot (an INSERT ...
// ON CONFLICT DO NOTHING when the snapshot had none), and writes the slot
// row only if that succeeded. The marker's row lock then orders all the
// writers of a mutex's slots, and a writer whose snapshot missed another's
// commit finds the marker changed (the xmin of its newest version differs)
// and writes nothing: its answer says `retry` (the backend sends the
// statement again at once, with a new snapshot). So each write is decided
// on every slot as it stands, with no lock of its own (no advisory lock,
// no session state: PgBouncer in transaction mode) and no extra round trip
// unless two writers of one mutex met. The locks are taken in one order,
// the marker's before a slot row's: no deadlock.
//
// The tokens {L}, {S}, {Z}, {H} name the tables (statements.cpp fills
// them).
#include <cstdint>
#include <string>

namespace simba::backend::pg {

// acquire_slot: $1 mutex, $2 contender, $3 ttl_ms, $4 transition_ms, $5
// quarantine (boolean), $6 holder ("" none), $7 N. The FIFO of
// core::may_take_free_slot on the waiters' table; history under the slot's
// row, as plain statements write theirs under their $1.
// A slot's row keeps its counters (acquisitions, losses: status_sql.hpp)
// as a plain lease row does; status adds a mutex's slots' together. Its
// {EXPIRY_LOSS} is filled in by statements.cpp (with_counters).
std::string acquire_slot_sql(int64_t history_limit);

// A slot's row ("m#k") as $1, the parameters of the plain statement:
// guard (guard, hold, extend), release, force_release; each moves the
// marker over the slots in the same statement. A release (and a forced
// release that frees the slot) NOTIFYs one live waiter of m's queue.
std::string guard_slot_sql();
std::string release_slot_sql(int64_t history_limit);
std::string force_release_slot_sql(int64_t history_limit);

} // namespace simba::backend::pg
