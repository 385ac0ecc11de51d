#include "cli/log.hpp"

#include "core/error.hpp"
#include "core/names.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace simba::cli {

namespace {

void write_line(const std::string& line) {
  // one write: lines from concurrent simbas do not interleave
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

// 2026-11-29T08:15:02.123Z: UTC, so that lines from many hosts sort together.
std::string iso8601_utc_ms(const timespec& ts) {
  tm t{};
  gmtime_r(&ts.tv_sec, &t);
  char buf[64];
  snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", t.tm_year + 1900, t.tm_mon + 1,
           t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, ts.tv_nsec / 1000000);
  return buf;
}

} // namespace

void Log::emit(const char* level, const std::string& m, bool with_stamp) const {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  if (json) {
    nlohmann::ordered_json j; // keys in this order: time first reads best
    j["time"] = iso8601_utc_ms(ts);
    j["pid"] = long(getpid());
    j["level"] = level;
    // replace: a CMD path or backend error with invalid UTF-8 must not throw
    j["message"] = m;
    write_line(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + '\n');
    return;
  }
  std::string line = "simba: ";
  if (with_stamp) {
    tm t{};
    localtime_r(&ts.tv_sec, &t);
    char buf[40];
    snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03ld [%ld] ", t.tm_hour, t.tm_min, t.tm_sec,
             ts.tv_nsec / 1000000, long(getpid()));
    line += buf;
  }
  if (std::string(level) == "warning") line += "warning: ";
  line += core::escape_control(m); // backend data (owners) can hold anything
  line += '\n';
  write_line(line);
}

void Log::info(const std::string& m) const {
  if (!quiet) emit("info", m, verbose || stamp);
}
void Log::verbose_line(const std::string& m) const {
  if (verbose && !quiet) emit("verbose", m, true);
}
void Log::warning(const std::string& m) const {
  if (!quiet) emit("warning", m, verbose || stamp);
}
void Log::at(int level, const std::string& m) const {
  if (level == 0) info(m);
  else if (level == 1) verbose_line(m);
  else if (level == 3) {
    if (!quiet && (verbose || isatty(2))) emit("notice", m, verbose || stamp);
  }
  else warning(m);
}

bool parse_log_format_json(const std::string& format) {
  if (format == "text") return false;
  if (format == "json") return true;
  throw UsageError("--log-format must be text or json, not '" + format + "'");
}

} // namespace simba::cli
