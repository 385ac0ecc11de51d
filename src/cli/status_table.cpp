// `simba status`'s table (status_table.hpp).
#include "cli/status_table.hpp"

#include "cli/status_view.hpp"

#include "core/duration.hpp"
#include "core/names.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <vector>

namespace simba::cli {
namespace {

using backend::Holder;
using backend::MutexLease;

// What a terminal is taken to be when it says nothing of its width.
constexpr size_t k_default_width = 80;
// The columns that give way to a narrow terminal, and the fewest
// characters each keeps (fewer when its text is shorter). The holder,
// host and command give way first; the mutex, which a `release --mutex`
// needs whole, only once they are at their fewest.
enum Column { c_mutex, c_state, c_holder, c_via, c_host, c_pid, c_command, c_count };
constexpr size_t k_least[c_count] = {12, 0, 10, 0, 8, 0, 10};
constexpr size_t k_gap = 2; // spaces between columns

// "2026-12-01T04:43:03Z (2m5s ago)" / "(in 10s)".
// Relative times in whole seconds from 1s on: milliseconds are noise here.
std::string when(int64_t at, int64_t now) {
  auto rounded = [](int64_t ms) { return core::format_duration(ms < 1000 ? ms : ms - ms % 1000); };
  std::string rel = at <= now ? rounded(now - at) + " ago" : "in " + rounded(at - now);
  return core::format_utc(at) + " (" + rel + ")";
}

// Every field is escaped (core::escape_control: ASCII only), so a byte is
// a column.
std::string cut(std::string s, size_t width) {
  if (width != k_unlimited_width && s.size() > width) s = s.substr(0, width - 1) + "~";
  return s;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

// The command as the table shows it: its file name, which says what runs
// (`deploy.sh`, not `/usr/local/bin/de~`). Only argv[0] is stored: the
// arguments can hold secrets (backend.hpp: Holder).
std::string command_name(const std::string& command) {
  size_t slash = command.find_last_of('/');
  std::string name = slash == std::string::npos ? command : command.substr(slash + 1);
  return core::escape_control(name.empty() ? command : name);
}

// A mutex with slots none of which is held while one was revoked: its
// marker (core/slots.hpp) still covers the revoked slot, whose CMD may
// still be stopping; the marker's own times and state say nothing then.
bool only_revoked_slots(const MutexLease& m, int64_t now) {
  return !m.slots.empty() && used_slots(m, now) == 0 &&
         std::any_of(m.slots.begin(), m.slots.end(),
                     [&](const backend::SlotLease& s) { return s.lease.revoked_at(now); });
}

// The state word: state_name's, but "revoked" for only_revoked_slots.
std::string table_state(const MutexLease& m, int64_t now) {
  return only_revoked_slots(m, now) ? "revoked" : state_name(m, now);
}

using Row = std::vector<std::string>;

Row row_of(const MutexLease& m, int64_t now) {
  const core::Lease& l = m.lease;
  bool owned = l.valid_at(now) && m.slots.empty();
  // A revoked lease has no owner, but its holder's CMD may still be
  // stopping: who that is, when the backend still knows.
  bool stopping = l.revoked_at(now) && !l.quarantine && m.slots.empty();
  const std::optional<Holder>& h = owned || stopping ? m.holder : std::nullopt;
  // Escaped: a row written by someone else must not drive the terminal.
  std::string holder = owned ? core::escape_control(core::label_of(l.owner_id)) : "-";
  // With slots: how many are used (each holder is a line below).
  if (!m.slots.empty() && used_slots(m, now) > 0)
    holder = std::to_string(used_slots(m, now)) + "/" + std::to_string(m.slots.size()) + " slots";
  auto or_dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  return {core::escape_control(m.mutex),
          table_state(m, now),
          holder,
          h ? or_dash(core::escape_control(h->via)) : "-",
          h ? or_dash(core::escape_control(h->host)) : "-",
          h ? std::to_string(h->pid) : "-",
          h ? or_dash(command_name(h->command)) : "-"};
}

std::string slot_line(const backend::SlotLease& slot, int64_t now) {
  const core::Lease& sl = slot.lease;
  std::string line = "  slot " + std::to_string(sl.slot) + ": ";
  if (sl.revoked_at(now))
    return line + "revoked (its command may still be stopping), free " +
           when(sl.transition_at, now) + ", token " + std::to_string(sl.fencing_token);
  line += core::escape_control(core::label_of(sl.owner_id));
  if (const std::optional<Holder>& h = slot.holder) {
    line += " on " + core::escape_control(h->host) + ", pid " + std::to_string(h->pid);
    if (!h->via.empty()) line += ", " + core::escape_control(h->via);
    if (!h->command.empty()) line += " (" + command_name(h->command) + ')';
  }
  return line + ", token " + std::to_string(sl.fencing_token) + ", lease ends " +
         when(sl.transition_at, now);
}

std::string waiter_line(const backend::Waiter& w, size_t position, int64_t now) {
  std::string line = "  waiting " + std::to_string(position) + ". " +
                     core::escape_control(core::label_of(w.owner_id));
  if (w.holder)
    line +=
        " on " + core::escape_control(w.holder->host) + ", pid " + std::to_string(w.holder->pid);
  line += ", since " + when(w.since, now);
  if (w.gives_up_at) line += ", gives up " + when(*w.gives_up_at, now);
  return line;
}

// The lines under a mutex's row: when, the token, the slots, the queue.
std::vector<std::string> details(const MutexLease& m, int64_t now) {
  const core::Lease& l = m.lease;
  std::vector<std::string> lines;
  std::string token = ", token " + std::to_string(l.fencing_token);
  bool slots_idle = only_revoked_slots(m, now);
  if (l.valid_at(now) && !slots_idle) {
    lines.push_back("  acquired " + when(l.acquired_at, now) + token);
    lines.push_back("  lease ends " + when(l.transition_at, now));
  } else if (l.revoked_at(now) && !l.quarantine) {
    lines.push_back("  revoked (its command may still be stopping), free " +
                    when(l.transition_at, now) + token);
  } else if (!l.free_at(now) && !slots_idle) {
    lines.push_back("  free " + when(l.transition_at, now) + token);
  }
  for (const backend::SlotLease& slot : m.slots)
    if (slot.lease.valid_at(now) || slot.lease.revoked_at(now))
      lines.push_back(slot_line(slot, now));
  for (size_t i = 0; i < m.waiters.size(); ++i)
    lines.push_back(waiter_line(m.waiters[i], i + 1, now));
  return lines;
}

// Each column's width: its widest cell; then, while the rows are wider
// than `width`, the widest of the holder, host and command loses a
// character, then the mutex.
std::vector<size_t> column_widths(const std::vector<Row>& rows, size_t width) {
  std::vector<size_t> w(c_count, 0);
  for (const Row& r : rows)
    for (size_t i = 0; i < c_count; ++i) w[i] = std::max(w[i], r[i].size());
  if (width == k_unlimited_width) return w;
  size_t total = std::accumulate(w.begin(), w.end(), size_t(0)) + k_gap * (c_count - 1);
  for (std::vector<Column> tier : {std::vector<Column>{c_holder, c_host, c_command}, {c_mutex}}) {
    while (total > width) {
      size_t widest = c_count;
      for (Column i : tier)
        if (w[i] > k_least[i] && (widest == c_count || w[i] > w[widest])) widest = i;
      if (widest == c_count) break; // all at their least
      --w[widest];
      --total;
    }
  }
  return w; // still too wide: the lines are cut
}

} // namespace

size_t output_width(bool wide) {
  if (wide || !isatty(STDOUT_FILENO)) return k_unlimited_width;
  if (const char* columns = std::getenv("COLUMNS")) {
    char* end = nullptr;
    long n = std::strtol(columns, &end, 10);
    if (*columns != '\0' && *end == '\0' && n > 0) return size_t(n);
  }
  struct winsize ws {};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return k_default_width;
}

void print_fitted(std::ostream& out, const std::string& line, size_t width) {
  if (width == k_unlimited_width || line.size() <= width) {
    out << line << '\n';
    return;
  }
  // Broken after a ", " where it can be, the rest indented below: nothing
  // is lost; a part still too long is cut.
  const std::string indent(line.find_first_not_of(' ') == 0 ? 2 : 4, ' ');
  std::string current;
  size_t from = 0;
  while (from < line.size()) {
    size_t comma = line.find(", ", from);
    size_t end = comma == std::string::npos ? line.size() : comma + 1;
    std::string part = line.substr(from, end - from);
    from = comma == std::string::npos ? end : end + 1;
    if (!current.empty() && current.size() + 1 + part.size() > width) {
      out << cut(current, width) << '\n';
      current = indent + part;
    } else {
      current += (current.empty() ? "" : " ") + part;
    }
  }
  out << cut(current, width) << '\n';
}

void print_status_table(std::ostream& out, const backend::Listing& listing, size_t width) {
  int64_t now = listing.now;
  std::vector<Row> rows = {{"MUTEX", "STATE", "HOLDER", "VIA", "HOST", "PID", "COMMAND"}};
  for (const MutexLease& m : listing.mutexes) rows.push_back(row_of(m, now));
  std::vector<size_t> w = column_widths(rows, width);
  for (size_t k = 0; k < rows.size(); ++k) {
    std::string line;
    for (size_t i = 0; i < c_count; ++i) {
      std::string cell = cut(rows[k][i], w[i]);
      line += i + 1 < c_count ? pad(cell, w[i] + k_gap) : cell;
    }
    out << cut(line, width) << '\n';
    if (k > 0)
      for (const std::string& d : details(listing.mutexes[k - 1], now)) print_fitted(out, d, width);
  }
}

} // namespace simba::cli
