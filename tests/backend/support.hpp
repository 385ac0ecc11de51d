#pragma once
// Helpers shared by the backend conformance tests. Every test works only
// through open_backend(uri) and the Backend interface, so the same cases run
// against every backend (URI from SIMBA_TEST_BACKEND).
#include "backend/backend.hpp"

#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <unistd.h>

namespace simba::test {

inline std::string backend_uri() {
  const char* u = std::getenv("SIMBA_TEST_BACKEND");
  return u ? u : "";
}

inline bool backend_is_sqlite() { return backend_uri().rfind("sqlite:", 0) == 0; }

inline std::unique_ptr<backend::Backend> open_test_backend() {
  return backend::open_backend(backend_uri());
}

// A mutex name no other test case (or earlier run against the same
// database) uses: pid, a counter and a label.
inline std::string unique_mutex(const std::string& label) {
  static int counter = 0;
  static const long long run = static_cast<long long>(time(nullptr));
  return "conf/" + std::to_string(run) + "-" + std::to_string(getpid()) + "-" +
         std::to_string(++counter) + "/" + label;
}

constexpr int64_t k_timeout = 5000;

} // namespace simba::test
