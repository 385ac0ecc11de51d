#include "cli/log.hpp"

#include "core/contender.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/names.hpp"
#include "sys/clock.hpp"

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

namespace {

// One line on stderr: JSON (time, pid, level, message, then `fields`) or text.
void write_entry(bool json, const char* level, const std::string& m, bool with_stamp,
                 const nlohmann::ordered_json& fields) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  if (json) {
    nlohmann::ordered_json j; // keys in this order: time first reads best
    j["time"] = iso8601_utc_ms(ts);
    j["pid"] = long(getpid());
    j["level"] = level;
    // replace: a CMD path or backend error with invalid UTF-8 must not throw
    j["message"] = m;
    for (const auto& [key, value] : fields.items()) j[key] = value;
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
  std::string lvl = level;
  if (lvl == "warning" || lvl == "error") line += lvl + ": ";
  line += core::escape_control(m); // backend data (owners) can hold anything
  line += '\n';
  write_line(line);
}

// 2026-12-01T08:15:02Z: the holder's start, in UTC like the JSON log's time
// (a CI log is read far from the machine that wrote it).
std::string iso8601_utc_s(int64_t epoch_ms) {
  timespec ts{};
  ts.tv_sec = time_t(epoch_ms / 1000);
  std::string s = iso8601_utc_ms(ts); // ...T08:15:02.000Z
  return s.substr(0, s.size() - 5) + "Z";
}

// A duration for people: whole seconds from one second on ("after 30m",
// not "after 30m0.004s"); the JSON fields keep the milliseconds.
std::string for_people(int64_t ms) {
  return core::format_duration(ms < 1000 ? ms : (ms + 500) / 1000 * 1000);
}

const char* event_name(core::WaitNotice::Event e) {
  using E = core::WaitNotice::Event;
  switch (e) {
  case E::waiting: return "waiting";
  case E::still_waiting: return "still_waiting";
  case E::gave_up: return "gave_up";
  case E::busy: return "busy";
  case E::backend_failing: return "backend_failing";
  case E::backend_back: return "backend_back";
  }
  return "?";
}

// 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st, ...
std::string ordinal(int n) {
  int tens = n % 100, ones = n % 10;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : ones == 1                ? "st"
                       : ones == 2                ? "nd"
                       : ones == 3                ? "rd"
                                                  : "th";
  return std::to_string(n) + suffix;
}

// "held by 4711@build-3 since 2026-12-01T08:15:02Z", "its lease was revoked
// ...", "in quarantine ...", or "" when no holder is known. The holder's label (its
// --contender-id, by default <pid>@<host>) is all a backend tells of it.
std::string holder_text(const core::WaitNotice& n, int64_t wall_now, bool redis,
                        nlohmann::ordered_json& f) {
  if (n.quarantine) { // status's state `quarantine` (docs/backends/)
    f["quarantine"] = true;
    f["free_in_ms"] = n.free_in_ms;
    return "in quarantine until about " + iso8601_utc_s(wall_now + n.free_in_ms) + " (in " +
           for_people(n.free_in_ms) +
           "): no simba marker of this server run on this database: new, restarted, failed "
           "over or flushed, it may have lost a running lease" +
           (redis ? " (a Redis database you know is new: simba doctor --init)" : "");
  }
  if (n.revoked) {
    f["revoked"] = true;
    f["free_in_ms"] = n.free_in_ms;
    // Also what a waiter refused by the FIFO gate is shown (core/fifo.hpp):
    // a lease that ran out, kept for the first waiter until the fallback.
    return "its lease was revoked (release --force) or ran out; free in " +
           for_people(n.free_in_ms);
  }
  if (n.holder_id.empty()) return "";
  std::string label(core::label_of(n.holder_id));
  f["holder"] = label;
  f["holder_id"] = n.holder_id;
  std::string text = "held by " + label;
  if (n.held_ms) {
    std::string since = iso8601_utc_s(wall_now - *n.held_ms);
    f["held_since"] = since;
    f["held_ms"] = *n.held_ms;
    text += " since " + since;
  }
  if (n.holder_has_our_label) text += " (another simba with our --contender-id " + label + ")";
  return text;
}

} // namespace

void Log::emit(const char* level, const std::string& m, bool with_stamp) const {
  write_entry(json, level, m, with_stamp, nlohmann::ordered_json::object());
}

void Log::notice(int level, const core::WaitNotice& n) const {
  using E = core::WaitNotice::Event;
  if (quiet && level != 4) return;
  nlohmann::ordered_json f = nlohmann::ordered_json::object();
  f["event"] = event_name(n.event);
  f["mutex"] = n.mutex;
  f["waited_ms"] = n.waited_ms;
  std::string holder = holder_text(n, sys::wall_ms(), redis, f);
  if (n.gives_up_in_ms) f["gives_up_in_ms"] = *n.gives_up_in_ms;
  std::string trouble; // while the backend fails: what it says
  if (!n.error.empty()) {
    f["error"] = n.error;
    f["failing_ms"] = n.failing_ms;
    f["failures"] = n.failures;
    trouble = "backend unavailable: " + n.error;
  }
  const std::string waited = for_people(n.waited_ms);
  auto with = [](std::string a, const std::string& b, const char* sep = ": ") {
    return b.empty() ? a : a + sep + b;
  };
  std::string m;
  // The place, when others wait too ("1st of 1" tells nothing).
  std::string place;
  if (n.queue_length > 0) {
    f["queue_position"] = n.queue_position;
    f["queue_length"] = n.queue_length;
    if (n.queue_length > 1)
      place =
          ", " + ordinal(n.queue_position) + " of " + std::to_string(n.queue_length) + " in line";
  }
  switch (n.event) {
  case E::waiting: m = with("waiting for " + n.mutex + place, holder); break;
  case E::still_waiting:
    m = with("still waiting for " + n.mutex + " after " + waited + place,
             trouble.empty() ? holder
                             : trouble + " (failing for " + for_people(n.failing_ms) + ")");
    break;
  case E::gave_up:
    m = with("gave up waiting for " + n.mutex + " after " + waited,
             trouble.empty() ? holder : trouble);
    break;
  case E::busy:
    m = with(n.mutex + (n.quarantine ? " is unavailable (--no-wait)" : " is busy (--no-wait)"),
             holder);
    break;
  case E::backend_failing:
    m = "backend failing while waiting for " + n.mutex + ": " + n.error +
        "; trying again with back-off, at most " + for_people(n.retry_max_ms) + " apart";
    break;
  case E::backend_back:
    m = "backend answers again after " + for_people(n.failing_ms) + " (" +
        std::to_string(n.failures) + (n.failures == 1 ? " failed try)" : " failed tries)");
    break;
  }
  if (n.gives_up_in_ms && (n.event == E::waiting || n.event == E::still_waiting)) {
    m += " (giving up in " + for_people(*n.gives_up_in_ms) + ")";
  }
  static const char* const k_levels[] = {"info", "verbose", "warning", "notice", "error"};
  const char* name = level >= 0 && level <= 4 ? k_levels[level] : "warning";
  if (level == 1 && !verbose) return;
  write_entry(json, name, m, verbose || stamp || level == 1, f);
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
  if (level == 0)
    info(m);
  else if (level == 1)
    verbose_line(m);
  else if (level == 3) {
    if (!quiet && (verbose || isatty(2))) emit("notice", m, verbose || stamp);
  } else if (level == 4) {
    emit("error", m, verbose || stamp); // even with -q: it says why simba ends
  } else {
    warning(m);
  }
}

bool parse_log_format_json(const std::string& format) {
  if (format == "text") return false;
  if (format == "json") return true;
  throw UsageError("--log-format must be text or json, not '" + format + "'");
}

} // namespace simba::cli
