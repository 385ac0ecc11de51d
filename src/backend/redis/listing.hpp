#pragma once
// `simba status` on Redis: every mutex ever acquired under the URI's
// prefix, with its lease, at the server's time.
#include "backend/backend.hpp"
#include "backend/redis/client.hpp"

#include <cstdint>

namespace simba::backend::redis {

Listing list_mutexes(Client& client, int64_t timeout_ms);

} // namespace simba::backend::redis
