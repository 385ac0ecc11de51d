#pragma once
// The lease table of the SQLite backend, the statements on it, and making
// sure a database has it: created in a new database (in WAL mode), migrated
// in one made by an older simba.
//
// The wall-clock columns (acquired_at, ttl_at, transition_at: epoch ms)
// place a lease on the calendar for people and are what a simba of the
// first wave reads and writes; the boot_ columns time it on CLOCK_BOOTTIME
// of the boot `boot_id` (clocks.hpp). `boot_token` is the fencing token the
// boot_ columns were written with: a row whose token differs was last
// written by an older simba, which leaves the boot_ columns as they were
// (lease_row.hpp). `holding` (1: the lease is only kept for --min-hold,
// Lease::holding) counts only in a row so stamped. `holder` (holder.hpp)
// is who took the lease with fencing token `holder_token`: written by the
// acquisition that takes a new lease, kept by every other write (NULL
// bound: COALESCE), and shown only while the tokens match.
// `history_seq` counts the history events written for the row
// (history_table.hpp: it places each in the ring); NULL bound keeps it.
// `acquisitions` and `losses` are the row's counters (backend.hpp:
// MutexLease), raised in the transaction of their event and never
// lowered; `lost_token` is the token of the last lease whose loss its
// holder's lost event counted while it still stood, so that its later end
// is not counted again. NULL bound keeps each; NULL read is 0.
namespace simba::backend::sqlite {

class Connection;
class DatabaseFiles;

#define SIMBA_SQL_ROW                                                                              \
  "owner_id, acquired_at, ttl_at, transition_at, fencing_token, boot_id, boot_acquired_at, "       \
  "boot_ttl_at, boot_transition_at, boot_token, holding"

// The columns of SIMBA_SQL_ROW in this order (lease_row.cpp reads them so),
// then the holder's two (k_holder_column), history_seq
// (k_history_seq_column) and the counters': the select is also the probe
// that finds a table without them (ensure_schema).
constexpr const char* k_sql_select =
    "SELECT " SIMBA_SQL_ROW ", holder, holder_token, history_seq, acquisitions, losses, "
    "lost_token FROM simba_mutex WHERE mutex = ?1";
constexpr int k_holder_column = 11;
constexpr int k_history_seq_column = 13;

// status: after the holder's two, the counters (k_counters_column).
constexpr const char* k_sql_list =
    "SELECT mutex, " SIMBA_SQL_ROW ", holder, holder_token, acquisitions, losses FROM simba_mutex "
    "ORDER BY mutex";
constexpr int k_counters_column = 13; // of the row, as k_holder_column

constexpr const char* k_sql_list_one =
    "SELECT mutex, " SIMBA_SQL_ROW ", holder, holder_token, acquisitions, losses FROM simba_mutex "
    "WHERE mutex = ?1 OR (mutex >= ?1 || '#' AND mutex < ?1 || '$') ORDER BY mutex"; // and its
                                                                                     // slots' rows

constexpr const char* k_sql_upsert =
    "INSERT INTO simba_mutex(mutex, " SIMBA_SQL_ROW ", holder, holder_token, history_seq, "
    "acquisitions, losses, lost_token) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18) "
    "ON CONFLICT(mutex) DO UPDATE SET "
    "owner_id = excluded.owner_id, acquired_at = excluded.acquired_at, ttl_at = excluded.ttl_at, "
    "transition_at = excluded.transition_at, fencing_token = excluded.fencing_token, "
    "boot_id = excluded.boot_id, boot_acquired_at = excluded.boot_acquired_at, "
    "boot_ttl_at = excluded.boot_ttl_at, boot_transition_at = excluded.boot_transition_at, "
    "boot_token = excluded.boot_token, holding = excluded.holding, "
    "holder = COALESCE(excluded.holder, holder), "
    "holder_token = COALESCE(excluded.holder_token, holder_token), "
    "history_seq = COALESCE(excluded.history_seq, history_seq), "
    "acquisitions = COALESCE(excluded.acquisitions, acquisitions), "
    "losses = COALESCE(excluded.losses, losses), "
    "lost_token = COALESCE(excluded.lost_token, lost_token)";

// record_lost (sqlite_backend.cpp): the history's bookkeeping of the row
// only, never its lease.
constexpr const char* k_sql_note_lost =
    "UPDATE simba_mutex SET history_seq = ?2, losses = ?3, lost_token = ?4 WHERE mutex = ?1";

#undef SIMBA_SQL_ROW

// Makes sure the opened database has the table (creating it when the
// database is new, adding the boot_, holder, history_seq and counter
// columns to one made by an older simba, and the lost event's columns to
// its history ring),
// then configures the connection. A database we may only read is opened
// again as immutable when it must be (files.how().read_only_ok). Throws
// UnavailableError.
void ensure_schema(Connection& db, const DatabaseFiles& files);

} // namespace simba::backend::sqlite
