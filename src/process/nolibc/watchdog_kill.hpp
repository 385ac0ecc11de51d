#pragma once
// The watchdog's kill: CMD's group and every descendant of a root, in a few
// passes over the tree. Runs in the watchdog (no libc: see syscalls.hpp).
#include <atomic>
#include <cstdint>

namespace simba::process::watchdog_kill {

// Whether the kill still stands: false once the supervisor has disarmed the
// watchdog or armed it anew (the deadline it fired on is gone). CMD and what
// it left are dead then, and a next CMD may already run: it must be spared.
struct Mandate {
  const std::atomic<int64_t>* deadline = nullptr; // null: unconditional
  int64_t fired_on = 0;
  bool holds() const { return !deadline || deadline->load() == fired_on; }
};

// SIGKILLs CMD's group `pgid` and every descendant of `root` (the
// supervisor, whose tree holds the watchdog's, while it lives; the watchdog
// itself once it died), and every group one of them leads, but not the
// calling watchdog. `by_scan`: walk by a scan of /proc (a test hook).
void kill_everything(long root, long pgid, bool by_scan, const Mandate& mandate = {});

} // namespace simba::process::watchdog_kill
