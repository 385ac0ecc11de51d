#pragma once
// libpq, loaded when a postgres URI is used (dlopen of its soname), never
// linked: simba on SQLite and Redis starts as fast as before and runs on
// machines without libpq (docs/backends/postgres.md). The few types and functions
// simba calls are declared here rather than taken from libpq-fe.h, so that
// the build needs no libpq-dev either: they are libpq.so.5's stable ABI
// (the soname changes when it does), and the enum values are the ones it
// has had since PostgreSQL 7.
#include <string>

namespace simba::backend::pg {

struct PGconn;
struct PGresult;
using Oid = unsigned int;
// A notification: the channel, the notifying session, the payload (libpq's
// struct pgNotify since PostgreSQL 9.0; simba reads only the payload).
struct PGnotify {
  char* relname;
  int be_pid;
  char* extra;
  PGnotify* next;
};

enum ConnStatus { k_connection_ok = 0, k_connection_bad = 1 };
enum PollingStatus { k_polling_failed = 0, k_polling_reading, k_polling_writing, k_polling_ok };
enum ExecStatus { k_empty_query = 0, k_command_ok, k_tuples_ok };
constexpr int k_diag_sqlstate = 'C';

// The functions simba calls, taken from the library by name.
struct Libpq {
  PGconn* (*connect_start_params)(const char* const* keywords, const char* const* values,
                                  int expand_dbname);
  int (*connect_poll)(PGconn*);
  int (*status)(const PGconn*);
  char* (*error_message)(const PGconn*);
  int (*socket)(const PGconn*);
  int (*set_nonblocking)(PGconn*, int);
  void* (*set_notice_processor)(PGconn*, void (*)(void*, const char*), void*);
  int (*send_query_params)(PGconn*, const char* command, int n, const Oid* types,
                           const char* const* values, const int* lengths, const int* formats,
                           int result_format);
  int (*send_query)(PGconn*, const char* command);
  int (*flush)(PGconn*);
  int (*consume_input)(PGconn*);
  int (*is_busy)(PGconn*);
  PGresult* (*get_result)(PGconn*);
  int (*result_status)(const PGresult*);
  char* (*result_error_field)(const PGresult*, int field);
  char* (*result_error_message)(const PGresult*);
  int (*ntuples)(const PGresult*);
  int (*nfields)(const PGresult*);
  char* (*get_value)(const PGresult*, int row, int field);
  int (*get_is_null)(const PGresult*, int row, int field);
  void (*clear)(PGresult*);
  void (*finish)(PGconn*);
  PGnotify* (*notifies)(PGconn*);
  void (*freemem)(void*);
};

// The library, loaded at the first call. Throws UnavailableError (exit 69)
// naming the package to install when libpq.so.5 cannot be loaded or lacks
// a function.
const Libpq& libpq();

} // namespace simba::backend::pg
