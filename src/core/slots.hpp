#pragma once
// --slots N: a mutex that N holders may hold at once (docs/recipes.md "At most N at once"). Each
// slot is a lease of its own, stored under a name of its own, so that
// guard, hold, extend and release address one slot exactly as they address
// a plain mutex. Slot k of mutex m is stored as "m#k" ('#' is not allowed in
// mutex names: no slot row is ever a user's mutex). The mutex's own name
// then holds a marker lease: owner "#slots:N", valid while any slot is. The
// marker is the record of N and keeps plain (N = 1) contenders waiting
// while slots are held, as any lease of theirs would.
#include <string>
#include <string_view>

namespace simba::core {

inline std::string slot_row(const std::string& mutex, int slot) {
  return mutex + "#" + std::to_string(slot);
}

inline std::string slot_marker(int slots) { return "#slots:" + std::to_string(slots); }

// The N of a marker's owner id; 1 for any other owner (a plain holder);
// 0 for no owner.
inline int slots_of_owner(std::string_view owner) {
  if (owner.empty()) return 0;
  constexpr std::string_view prefix = "#slots:";
  if (owner.substr(0, prefix.size()) != prefix) return 1;
  int n = 0;
  for (char c : owner.substr(prefix.size())) {
    if (c < '0' || c > '9' || n > 100000) return 1;
    n = n * 10 + (c - '0');
  }
  return n > 0 ? n : 1;
}

// The mutex a stored name belongs to: "m" for "m#k" and for "m".
inline std::string_view mutex_of_row(std::string_view row) { return row.substr(0, row.find('#')); }

// The most slots a mutex may have.
constexpr int k_max_slots = 1000;

// FIFO across slots: a free slot goes to the longest waiting live
// contender. With `free_slots` free, the first `free_slots` live waiters
// may take them (the releases woke them, one each); anyone else, a
// latecomer or a waiter further back, is refused until one of the slots
// has stayed free for k_slot_fallback_ms (then those woken did not come:
// stopped, or their notification failed, and the timed fallback lets
// anyone in). `live_ahead`: the live waiters queued before the contender
// (the whole queue when it is in none), counted up to `free_slots`;
// `free_since`: when the longest free of the free slots freed. A renewal
// of the contender's own slot is never gated.
constexpr int64_t k_slot_fallback_ms = 1000;

inline bool may_take_free_slot(int live_ahead, int free_slots, int64_t free_since, int64_t now) {
  return live_ahead < free_slots || now >= free_since + k_slot_fallback_ms;
}

} // namespace simba::core
