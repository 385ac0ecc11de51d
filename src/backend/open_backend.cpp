// open_backend(): the backend URI -> implementation map (DESIGN §5). The
// URI is parsed in uri.cpp; each backend is one line here.
#include "backend/open_backend.hpp"

#include "backend/etcd/etcd.hpp"
#include "backend/mysql/mysql.hpp"
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

std::unique_ptr<Backend> open_uri(EtcdUri&& u, Access) { return open_etcd(std::move(u)); }
std::unique_ptr<Backend> open_uri(MysqlUri&& u, Access access) {
  return open_mysql(std::move(u), access);
}

} // namespace

std::unique_ptr<Backend> open_backend(const std::string& uri, Access access) {
  BackendUri parsed = parse_backend_uri(uri);
  return std::visit([access](auto& u) { return open_uri(std::move(u), access); }, parsed);
}

} // namespace simba::backend
