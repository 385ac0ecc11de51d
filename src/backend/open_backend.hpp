#pragma once
// The factory: a backend URI -> the backend that serves it (DESIGN §5). The
// one place that knows every backend; the rest of simba sees backend.hpp.
#include "backend/backend.hpp"

#include <memory>
#include <string>

namespace simba::backend {

// Opens the backend named by `uri` (empty: the default SQLite file, DESIGN
// §5.1). Throws UsageError for an unknown scheme or malformed URI,
// UnavailableError when it cannot be opened (missing or untrusted
// directory, not a SQLite database, network filesystem, cannot connect).
std::unique_ptr<Backend> open_backend(const std::string& uri, Access access = Access::use);

} // namespace simba::backend
