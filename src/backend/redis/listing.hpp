#pragma once
// `simba status` on Redis: every mutex ever acquired under the URI's
// prefix, with its lease, at the server's time.
#include "backend/backend.hpp"
#include "backend/redis/client.hpp"

#include <cstdint>

namespace simba::backend::redis {

// status: the mutexes (all, or `mutex` only) with their holders and
// waiters (lua/inspect.lua), at the server's time.
Listing inspect_mutexes(Client& client, const std::string& mutex, int64_t timeout_ms);

// simba history: the events of `mutex` (empty: every mutex) at or after
// `since_ms` (lua/history.lua).
History read_history(Client& client, const std::string& mutex, int64_t since_ms,
                     int64_t timeout_ms);

// `s` in a SCAN MATCH pattern: its * ? [ ] \\ escaped.
std::string glob_escape(const std::string& s);

} // namespace simba::backend::redis
