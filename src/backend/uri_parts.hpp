#pragma once
// What the parsers of backend URIs share (uri.cpp, uri_redis.cpp,
// uri_postgres.cpp): one refusal, percent escapes, numbers, and one parser
// per scheme family. Internal to src/backend; the interface is uri.hpp.
#include "backend/uri.hpp"

#include <functional>
#include <string>

namespace simba::backend::uri_parts {

// Throws UsageError "invalid backend URI '<shown>': <why>".
[[noreturn]] void bad_uri(const std::string& shown, const std::string& why);
bool all_digits(const std::string& s);
// %XX escapes, so that a password or prefix may hold '@', '/', '&'...
std::string percent_decode(const std::string& s, const std::string& shown);
// Letters, digits, -._~ and the bytes of `keep` as they are, all else %XX
// (a NUL too).
std::string percent_encode(const std::string& s, const char* keep = ":/@");
// Each name=value item of a URI's query, split at '&' (empty items
// skipped), to `take(name, value, item)`: the value percent-decoded, the
// item as written. An item without '=' is refused without being named (it
// may be a mistyped secret).
void for_each_query_item(const std::string& query, const std::string& shown,
                         const std::function<void(const std::string& name, const std::string& value,
                                                  const std::string& item)>& take);
// A decimal number of at most 10 digits, no more than `max`.
long parse_number(const std::string& s, long max, const std::string& what,
                  const std::string& shown);

// `rest` is what follows "redis:", "rediss:" or "redis+unix:".
RedisUri parse_redis(bool unix_socket, bool tls, const std::string& rest, const std::string& shown);
// `rest` follows "redis+sentinel:" or "rediss+sentinel:".
RedisUri parse_sentinel(bool tls, const std::string& rest, const std::string& shown);
// `rest` follows "redis+cluster:" or "rediss+cluster:".
RedisUri parse_cluster(bool tls, const std::string& rest, const std::string& shown);
// `rest` follows "postgres:" or "postgresql:".
PostgresUri parse_postgres(const std::string& scheme, const std::string& rest,
                           const std::string& shown);

// `rest` follows "etcd:" or "etcds:".
EtcdUri parse_etcd(bool tls, const std::string& rest, const std::string& shown);
// `rest` follows "mysql:" or "mariadb:".
MysqlUri parse_mysql(const std::string& scheme, const std::string& rest, const std::string& shown);

} // namespace simba::backend::uri_parts
