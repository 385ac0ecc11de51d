#pragma once
// The errors that end simba. Each carries the exit code of DESIGN §6; they are
// thrown only for "cannot continue" and caught once, in main().
#include <stdexcept>
#include <string>

namespace simba {

namespace exit_code {
constexpr int k_usage = 64;        // EX_USAGE
constexpr int k_unavailable = 69;  // EX_UNAVAILABLE
constexpr int k_not_acquired = 75; // EX_TEMPFAIL
constexpr int k_lost = 76;         // ownership lost while CMD ran
constexpr int k_internal = 125;
constexpr int k_not_executable = 126;
constexpr int k_not_found = 127;
} // namespace exit_code

class Error : public std::runtime_error {
public:
  Error(int code, const std::string& message) : std::runtime_error(message), m_code(code) {}
  int code() const { return m_code; }

private:
  int m_code;
};

struct UsageError : Error {
  explicit UsageError(const std::string& m) : Error(exit_code::k_usage, m) {}
};
struct UnavailableError : Error {
  explicit UnavailableError(const std::string& m) : Error(exit_code::k_unavailable, m) {}
};
struct InternalError : Error {
  explicit InternalError(const std::string& m) : Error(exit_code::k_internal, m) {}
};

} // namespace simba
