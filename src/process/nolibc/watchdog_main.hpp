#pragma once
// The watchdog process itself: what runs in the clone (or the fork) that
// watchdog.cpp starts. No libc from its first instruction (see syscalls.hpp).

namespace simba::process {

struct WatchdogArgs;

// The clone's entry: `args` points to a WatchdogArgs. Never returns.
int watchdog_entry(void* args);

} // namespace simba::process
