#pragma once
// Messages on stderr: "simba: ..." lines, or one JSON object per line with
// --log-format json. Warnings always (unless -q), verbose lines only with -v.
#include <string>

namespace simba::core {
struct WaitNotice;
}

namespace simba::cli {

struct Log {
  bool quiet = false;
  bool verbose = false;
  bool stamp = false; // timestamps on every line (lead, schedule: long-running)
  bool json = false;  // {"time", "pid", "level", "message"} per line, for machines
  bool redis = false; // a Redis backend: a quarantine's notice names doctor --init
  void info(const std::string& m) const;
  void verbose_line(const std::string& m) const;
  void warning(const std::string& m) const;
  // level: 0 info, 1 verbose, 2 warning, 3 notice: printed only when stderr
  // is a terminal, or with -v, 4 error: printed even with -q
  // (core::LogLevel)
  void at(int level, const std::string& m) const;
  // A waiter's notice at `level`: one line of text, or a JSON object whose
  // "message" is that line and whose other fields carry its parts
  // (event, mutex, holder, held_since, waited_ms, error...).
  void notice(int level, const core::WaitNotice& n) const;

private:
  void emit(const char* level, const std::string& m, bool stamp) const;
};

// "text" or "json" (--log-format); anything else is a usage error.
bool parse_log_format_json(const std::string& format);

} // namespace simba::cli
