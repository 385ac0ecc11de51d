#pragma once
// Messages on stderr: "simba: ..." lines, or one JSON object per line with
// --log-format json. Warnings always (unless -q), verbose lines only with -v.
#include <string>

namespace simba::cli {

struct Log {
  bool quiet = false;
  bool verbose = false;
  bool stamp = false; // timestamps on every line (lead, schedule: long-running)
  bool json = false;  // {"time", "pid", "level", "message"} per line, for machines
  void info(const std::string& m) const;
  void verbose_line(const std::string& m) const;
  void warning(const std::string& m) const;
  // level: 0 info, 1 verbose, 2 warning, 3 notice: printed only when stderr
  // is a terminal, or with -v (core::Action::level)
  void at(int level, const std::string& m) const;

private:
  void emit(const char* level, const std::string& m, bool stamp) const;
};

// "text" or "json" (--log-format); anything else is a usage error.
bool parse_log_format_json(const std::string& format);

} // namespace simba::cli
