// Loading libpq (libpq.hpp).
#include "backend/postgres/libpq.hpp"

#include "core/error.hpp"

#include <dlfcn.h>

namespace simba::backend::pg {
namespace {

constexpr const char* k_soname = "libpq.so.5";

template <typename F> void take(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (!f)
    throw UnavailableError(std::string("the PostgreSQL backend needs ") + k_soname + " with " +
                           name + " (install the package libpq5)");
}

Libpq load() {
  void* lib = dlopen(k_soname, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    throw UnavailableError(std::string("the PostgreSQL backend needs ") + k_soname +
                           ": install the package libpq5 (" + (why ? why : "not found") + ")");
  }
  Libpq f{};
  take(lib, "PQconnectStartParams", f.connect_start_params);
  take(lib, "PQconnectPoll", f.connect_poll);
  take(lib, "PQstatus", f.status);
  take(lib, "PQerrorMessage", f.error_message);
  take(lib, "PQsocket", f.socket);
  take(lib, "PQsetnonblocking", f.set_nonblocking);
  take(lib, "PQsetNoticeProcessor", f.set_notice_processor);
  take(lib, "PQsendQueryParams", f.send_query_params);
  take(lib, "PQsendQuery", f.send_query);
  take(lib, "PQflush", f.flush);
  take(lib, "PQconsumeInput", f.consume_input);
  take(lib, "PQisBusy", f.is_busy);
  take(lib, "PQgetResult", f.get_result);
  take(lib, "PQresultStatus", f.result_status);
  take(lib, "PQresultErrorField", f.result_error_field);
  take(lib, "PQresultErrorMessage", f.result_error_message);
  take(lib, "PQntuples", f.ntuples);
  take(lib, "PQnfields", f.nfields);
  take(lib, "PQgetvalue", f.get_value);
  take(lib, "PQgetisnull", f.get_is_null);
  take(lib, "PQclear", f.clear);
  take(lib, "PQfinish", f.finish);
  take(lib, "PQnotifies", f.notifies);
  take(lib, "PQfreemem", f.freemem);
  return f;
}

} // namespace

const Libpq& libpq() {
  static const Libpq f = load();
  return f;
}

} // namespace simba::backend::pg
