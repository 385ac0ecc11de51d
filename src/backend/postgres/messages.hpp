#pragma once
// What the PostgreSQL backend's errors say beyond libpq's own words: the
// primary message of a statement's error, and what to do about the
// refusals a newcomer meets first.
#include <string>

namespace simba::backend::pg {

// "relation "t" does not exist" of libpq's one-lined
// "ERROR:  relation "t" does not exist LINE 4: ... ^".
std::string primary_message(const std::string& error);

// " (what to do)" for a connection refused for a reason a set-up can
// fix (no password given; PgBouncer refusing a start-up parameter), or "".
std::string connect_hint(const std::string& why);

} // namespace simba::backend::pg
