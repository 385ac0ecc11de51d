#pragma once
// The two clocks of one SQLite operation. Leases are timed on CLOCK_BOOTTIME:
// every process of the host shares it, it never steps (NTP, `date -s`) and it
// counts a suspend. It starts again at a reboot, hence the boot id stored
// with each lease: a lease of an earlier boot is over. The wall clock (the
// one SQLite's VFS reads, epoch ms) only places a lease on the calendar for
// people and seeds the fencing tokens (lease_rules.hpp, next_token()).
#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace simba::backend::sqlite {

// One reading of both clocks, in milliseconds.
struct Clocks {
  int64_t boot = 0;
  int64_t wall = 0;
};

// A new random id at every boot; read once per process. Empty if unreadable.
const std::string& boot_id();

// The clocks of the operation in progress, read inside its transaction (one
// writer at a time: their order is the order of the writes).
class OperationClocks {
public:
  // Reads both clocks; `vfs` is the connection's (its clock is the wall clock).
  void read(sqlite3_vfs* vfs);

  const Clocks& now() const { return m_now; }
  // Wall minus boot clock, kept steady across the wobble of two readings.
  int64_t boot_to_wall() const { return m_boot_to_wall; }
  // The boot clock's now as a reply gives it (on the wall clock's calendar).
  int64_t reply_now() const { return m_now.boot + m_boot_to_wall; }

private:
  Clocks m_now;
  int64_t m_boot_to_wall = 0;
  bool m_boot_to_wall_known = false;
};

} // namespace simba::backend::sqlite
