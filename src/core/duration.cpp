#include "core/duration.hpp"

#include "core/error.hpp"

#include <cctype>
#include <ctime>
#include <limits>

namespace simba::core {

// A number is digits with an optional decimal fraction ("1.5"); a unit
// follows each number, except a lone one (seconds). The total must come to
// whole milliseconds: "1.5s" is 1500 ms, "0.5ms" is refused.
int64_t parse_duration(std::string_view text, std::string_view what) {
  auto bad = [&](const char* why) {
    return UsageError(std::string(what) + ": invalid duration '" + std::string(text) + "' (" + why +
                      "; use e.g. 500ms, 1.5s, 10s, 2m, 1h, 1m30s)");
  };
  if (text.empty()) throw bad("empty");
  constexpr int64_t k_limit = int64_t(1) << 50; // ~35 000 years: no overflow below
  int64_t total = 0;
  size_t i = 0;
  bool bare = true;
  auto digit = [&](size_t at) {
    return at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]));
  };
  while (i < text.size()) {
    if (!digit(i)) throw bad(text[i] == '-' ? "negative" : "expected a number");
    // number = whole + fraction / 10^decimals
    int64_t whole = 0, fraction = 0, scale = 1;
    while (digit(i)) {
      whole = whole * 10 + (text[i] - '0');
      if (whole > k_limit) throw bad("too large");
      ++i;
    }
    if (i < text.size() && text[i] == '.') {
      ++i;
      if (!digit(i)) throw bad("expected digits after the decimal point");
      for (; digit(i); ++i) {
        if (scale == 1000000) throw bad("more than 6 decimals"); // keeps fraction * factor small
        fraction = fraction * 10 + (text[i] - '0');
        scale *= 10;
      }
    }
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    int64_t factor;
    if (unit.empty()) {
      if (!bare || i != text.size()) throw bad("missing unit");
      factor = 1000; // a bare number is seconds
    } else if (unit == "ms") {
      factor = 1;
    } else if (unit == "s") {
      factor = 1000;
    } else if (unit == "m") {
      factor = 60 * 1000;
    } else if (unit == "h") {
      factor = 3600 * 1000;
    } else if (unit == "d") {
      factor = 24 * 3600 * 1000; // --once-per 1d

    } else {
      throw bad("unknown unit");
    }
    bare = false;
    if (whole > k_limit / factor) throw bad("too large");
    if (fraction * factor % scale != 0) throw bad("not a whole number of milliseconds");
    total += whole * factor + fraction * factor / scale;
    if (total > k_limit) throw bad("too large");
  }
  return total;
}

std::string format_duration(int64_t ms) {
  if (ms < 0) return "-" + format_duration(-ms);
  if (ms < 1000) return std::to_string(ms) + "ms";
  std::string out;
  int64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, rest = ms % 1000;
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (s || rest) {
    out += std::to_string(s);
    if (rest) {
      char frac[8];
      snprintf(frac, sizeof frac, ".%03d", int(rest));
      std::string f(frac);
      while (f.back() == '0') f.pop_back();
      out += f;
    }
    out += "s";
  }
  return out;
}

std::string format_utc(int64_t epoch_ms) {
  time_t secs = static_cast<time_t>(epoch_ms >= 0 ? epoch_ms / 1000 : (epoch_ms - 999) / 1000);
  struct tm t = {};
  gmtime_r(&secs, &t);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &t);
  return buf;
}

} // namespace simba::core
