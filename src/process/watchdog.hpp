#pragma once
// The watchdog of DESIGN §4: a tiny forked process that SIGKILLs CMD's
// process group (and every descendant of the supervisor) at the lease
// deadline unless the supervisor moved the deadline forward. It does not
// depend on the supervisor running: a SIGSTOPped or hung simba still cannot
// keep CMD alive past its lease. When the supervisor dies (its end of the
// pipe closes) the watchdog kills CMD's process group at once: PDEATHSIG only
// reaches CMD itself, not CMD's own children.
#include <sys/types.h>

#include <cstdint>

namespace simba::process {

class Watchdog {
public:
  Watchdog() = default;
  ~Watchdog(); // closes the channel: the watchdog then kills CMD's group
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Forks the watchdog for process group `pgid` (0: not known yet, see
  // set_group), armed at `deadline_ms` (CLOCK_BOOTTIME milliseconds). At the
  // deadline it kills every descendant of the supervisor, group or not.
  void start(pid_t pgid, int64_t deadline_ms);
  // Tells the watchdog CMD's process group (killed when the supervisor dies).
  void set_group(pid_t pgid);
  // Moves the deadline (forward after a renewal, or earlier).
  void set_deadline(int64_t deadline_ms);
  // Disarms the watchdog (CMD and what it left are gone); it exits on its own
  // at once and is not waited for (its zombie is reaped by Child::reap).
  void stop();

  pid_t pid() const { return m_pid; }

private:
  pid_t m_pid = -1;
  int m_fd = -1; // our end of the socketpair
};

} // namespace simba::process
