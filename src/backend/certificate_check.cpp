#include "backend/certificate_check.hpp"

#include <ctime>

namespace simba::backend {
namespace {

constexpr int64_t k_warn_days = 30;

std::string day_of(int64_t unix_s) {
  std::time_t t = std::time_t(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

} // namespace

Finding certificate_finding(const std::string& what, int64_t not_after_s,
                            const std::string& setting, int64_t now_s) {
  int64_t days = (not_after_s - now_s) / 86400;
  std::string end = day_of(not_after_s);
  if (not_after_s - now_s < k_warn_days * 86400)
    return Finding{"tls", Finding::Verdict::warn,
                   what + ", but it expires " + end + " (in " + std::to_string(days) + " days)",
                   "renew the server's certificate (" + setting + ") before " + end +
                       ": then every connection fails"};
  return Finding{"tls", Finding::Verdict::ok,
                 what + ", valid until " + end + " (" + std::to_string(days) + " days)", ""};
}

} // namespace simba::backend
