#pragma once
// The Redis backend (DESIGN §5.2): one Redis server shared by many hosts.
// The class itself is private to redis_backend.cpp; open_backend() reaches it
// through this factory.
#include "backend/backend.hpp"

#include <memory>
#include <string>

namespace simba::backend {

// Opens the Redis backend of a URI whose scheme (lower case) is "redis" or
// "redis+unix" and whose remainder after "scheme:" is `rest`:
//
//   redis://[[user]:password@]host[:port][/db][?prefix=simba:&timeout=2s]
//   redis+unix://[[user]:password@]/path/redis.sock[?db=N&prefix=...&timeout=...]
//
// The password may come from SIMBA_REDIS_PASSWORD instead (used when the URI
// has none). `shown` is the URI with any password hidden, for messages.
// Throws UsageError for a malformed URI, UnavailableError when the server
// cannot be reached, refuses the password, or does not speak Redis — within
// the URI's timeout.
std::unique_ptr<Backend> open_redis(const std::string& scheme, const std::string& rest,
                                    const std::string& shown);

} // namespace simba::backend
