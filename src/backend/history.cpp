// SIMBA_HISTORY_LIMIT (history.hpp).
#include "backend/history.hpp"

#include "core/error.hpp"

#include <cstdlib>
#include <string>

namespace simba::backend {

int64_t history_limit() {
  static const int64_t limit = [] {
    const char* v = std::getenv("SIMBA_HISTORY_LIMIT");
    if (!v || !*v) return k_default_history_limit;
    char* end = nullptr;
    long long n = std::strtoll(v, &end, 10);
    if (*end != '\0' || n < 0 || n > 1000000)
      throw UsageError(std::string("SIMBA_HISTORY_LIMIT must be 0 to 1000000, not '") + v + "'");
    return int64_t(n);
  }();
  return limit;
}

} // namespace simba::backend
