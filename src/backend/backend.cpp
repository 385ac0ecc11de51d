// open_backend(): the backend URI -> implementation map (DESIGN §5). The
// URI is parsed in uri.cpp; each backend is one line here.
#include "backend/backend.hpp"

#include "backend/postgres/postgres.hpp"
#include "backend/redis/redis.hpp"
#include "backend/sqlite/sqlite_backend.hpp"
#include "backend/uri.hpp"

namespace simba::backend {
namespace {

std::unique_ptr<Backend> open_uri(const SqliteUri& u, Access access) {
  SqliteOpen how;
  // The default location is the one place simba makes when missing.
  how.create_directories = u.default_location && access == Access::use;
  how.create_file = access == Access::use;
  how.read_only_ok = access == Access::inspect;
  return open_sqlite(u.path, how);
}

std::unique_ptr<Backend> open_uri(RedisUri&& u, Access) { return open_redis(std::move(u)); }

std::unique_ptr<Backend> open_uri(PostgresUri&& u, Access access) {
  return open_postgres(std::move(u), access);
}

Reply no_done_records() {
  return Reply::failure(Reply::Status::failed, "this backend keeps no done records (--once-per)");
}

} // namespace

Reply Backend::acquire_once(const std::string&, const std::string&, int64_t, int64_t,
                            const core::OncePer&, const std::string&, const std::string&, int64_t) {
  return no_done_records();
}

Reply Backend::release_once(const std::string&, const std::string&, uint64_t, int, int64_t) {
  return no_done_records();
}

Reply Backend::guard_mark(const std::string& mutex, const std::string& contender, uint64_t token,
                          int64_t ttl_ms, int64_t transition_ms, bool, int64_t timeout_ms) {
  return guard(mutex, contender, token, ttl_ms, transition_ms, timeout_ms);
}

Reply Backend::acquire_slot(const std::string& mutex, const std::string& contender, int slots,
                            int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) {
  if (slots == 1) return acquire(mutex, contender, ttl_ms, transition_ms, timeout_ms);
  return Reply::failure(Reply::Status::failed, describe() + " has no --slots above 1");
}

Reply Backend::done_record(const std::string&, int64_t) { return no_done_records(); }

History Backend::history(const std::string&, int64_t, int64_t) {
  History h;
  h.ok = true;
  return h;
}

Reply Backend::record_lost(const std::string&, const std::string&, const LostLease&, int64_t) {
  return Reply::failure(Reply::Status::failed, describe() + " keeps no history");
}

std::unique_ptr<Backend> open_backend(const std::string& uri, Access access) {
  BackendUri parsed = parse_backend_uri(uri);
  return std::visit([access](auto& u) { return open_uri(std::move(u), access); }, parsed);
}

} // namespace simba::backend
