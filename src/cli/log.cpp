#include "cli/log.hpp"

#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace simba::cli {

namespace {

void emit(const char* kind, const std::string& m, bool stamp) {
  std::string line = "simba: ";
  if (stamp) {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    tm t{};
    localtime_r(&ts.tv_sec, &t);
    char buf[40];
    snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03ld [%ld] ", t.tm_hour, t.tm_min, t.tm_sec,
             ts.tv_nsec / 1000000, long(getpid()));
    line += buf;
  }
  line += kind;
  line += m;
  line += '\n';
  // one write: lines from concurrent simbas do not interleave
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

} // namespace

void Log::info(const std::string& m) const {
  if (!quiet) emit("", m, verbose || stamp);
}
void Log::verbose_line(const std::string& m) const {
  if (verbose && !quiet) emit("", m, true);
}
void Log::warning(const std::string& m) const {
  if (!quiet) emit("warning: ", m, verbose || stamp);
}
void Log::at(int level, const std::string& m) const {
  if (level == 0) info(m);
  else if (level == 1) verbose_line(m);
  else if (level == 3) {
    if (verbose || isatty(2)) info(m);
  }
  else warning(m);
}

} // namespace simba::cli
