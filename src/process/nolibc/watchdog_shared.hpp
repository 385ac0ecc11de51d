#pragma once
// What simba (the supervisor) and its watchdog share: the block at the start
// of the watchdog's mapping, the arguments the watchdog starts with, and the
// timer both set. Both sides include it; see watchdog.hpp for the contract.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "process/nolibc/syscalls.hpp"
#include "process/watchdog.hpp"

namespace simba::process {

constexpr int64_t k_no_deadline = -1;
// Lock-free, so the watchdog never takes a lock (nor calls libatomic).
static_assert(std::atomic<int64_t>::is_always_lock_free,
              "the shared block needs lock-free atomics");
static_assert(std::atomic<int32_t>::is_always_lock_free,
              "the shared block needs lock-free atomics");

// The watchdog's mapping: the Shared block and the start arguments in the
// first page, a guard page, then its stack (a kill pass needs about 60 KiB
// of buffers).
constexpr size_t k_page = 4096;
constexpr size_t k_region = 256 * 1024;

// The deadline and CMD's group, and the timer (a timerfd the supervisor
// creates and both set). Arming, or moving the deadline earlier, is a store
// and a timerfd_settime() by the supervisor: the watchdog is not woken, so a
// hand-over's path from "acquired" to "CMD runs" has no context switch to
// it. A renewal, which moves the deadline later, is a store only: the
// watchdog re-reads the deadline when its timer fires and sleeps on if it
// has moved. Whichever side sets the timer last, it ends up at the deadline
// (see check_deadline() in watchdog_main.cpp). Without a timerfd the
// supervisor wakes the watchdog with a byte on the channel instead.
struct Watchdog::Shared {
  std::atomic<int64_t> deadline_ms; // k_no_deadline: disarmed
  std::atomic<int32_t> pgid;        // CMD's group; 0 while unknown
  // Test hook (SIMBA_TEST_PROC_SCAN, read by the supervisor: the watchdog
  // has no getenv): walk by a scan of /proc, as on a kernel without
  // /proc/PID/task/TID/children, which tests cannot otherwise reach.
  bool walk_by_scan;
  // Test hook (SIMBA_TEST_WATCHDOG_PAUSE_MS): a pause between reading the
  // deadline and setting the timer, the window in which the supervisor may
  // set the timer too.
  int32_t pause_before_setting_ms;

  // spawn(): the request the supervisor leaves before it wakes the
  // watchdog; it waits for the answer on the channel, so the request stays valid.
  std::atomic<SpawnRequest*> spawn_request;
  // CMD's exits and stops, relayed (the watchdog is its parent): the last
  // CMD spawned; the one that exited and its wait status (the status is
  // stored first); how often CMD stopped, and by which signal the last time.
  std::atomic<int32_t> cmd_pid;
  std::atomic<int32_t> exited_pid;
  std::atomic<int32_t> exit_status;
  std::atomic<uint32_t> stops;
  std::atomic<int32_t> stop_signal;
};

struct Watchdog::SpawnRequest {
  int (*entry)(void*);
  void* arg;
  void* stack_top;
  long pid; // the answer: the new process, or -1
};

// What the watchdog starts with (placed after Shared in its mapping).
struct WatchdogArgs {
  Watchdog::Shared* shared;
  int channel; // its end of the socketpair
  int peer;    // the supervisor's end: closed first thing (see become_watchdog)
  int timer;   // the shared timerfd, or -1: the watchdog makes its own
  long supervisor;
};

// Sets timerfd `tfd` to fire at `deadline_ms` (CLOCK_BOOTTIME); k_no_deadline
// disarms it. False when it cannot.
static inline bool set_timer(long tfd, int64_t deadline_ms) {
  itimerspec its{};
  if (deadline_ms != k_no_deadline) {
    if (deadline_ms < 1) deadline_ms = 1; // an all-zero it_value would disarm
    its.it_value.tv_sec = time_t(deadline_ms / 1000);
    its.it_value.tv_nsec = long(deadline_ms % 1000) * 1000000L;
  }
  return raw::timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its) == 0;
}

} // namespace simba::process
