#pragma once
// The watchdog of DESIGN §4: a tiny process that SIGKILLs CMD's
// process group (and every descendant of the supervisor) at the lease
// deadline unless the supervisor moved the deadline forward. It does not
// depend on the supervisor running: a SIGSTOPped or hung simba still cannot
// keep CMD alive past its lease.
//
// It is also CMD's parent and a child subreaper (spawn()): whatever CMD
// starts, a setsid'd daemon after a double fork included, stays below it
// when its own parent exits. So when the supervisor dies (kill -9: its end
// of the channel closes) the watchdog still finds and kills all of it at
// once; were simba the subreaper, its death would hand those orphans to
// init, out of anyone's reach. It relays CMD's exits and stops to the
// supervisor (take_exit(), take_stop(), announced by a SIGCHLD).
#include "sys/fd.hpp"

#include <sys/types.h>

#include <cstdint>

namespace simba::process {

class Watchdog {
public:
  Watchdog() = default;
  ~Watchdog(); // closes the channel: an armed watchdog then kills CMD's group
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts the watchdog, disarmed. A no-op while it runs. The supervisor
  // starts it first thing, off the path from "acquired" to "CMD runs" (a
  // waiter's hand-over above all), and keeps it for every CMD it runs.
  void start();
  // Arms the watchdog at `deadline_ms` (CLOCK_BOOTTIME milliseconds), or
  // moves the deadline (forward after a renewal, or earlier). Starts it
  // when it is not running (never started, or killed by someone). At the
  // deadline it kills CMD's group and every descendant of the supervisor.
  void set_deadline(int64_t deadline_ms);
  // Tells the watchdog CMD's process group (killed when the supervisor dies).
  void set_group(pid_t pgid);
  // Disarms it: CMD and what it left are gone. It stays, idle, for the next CMD.
  void disarm();
  // Ends it (disarmed). Not waited for: its zombie is reaped by Child::reap
  // or by our own exit.
  void stop();
  // Disarms it and leaves its end to our exit, the last thing simba does:
  // the channel then closes after simba let go of the memory the two share,
  // so the watchdog, its last user, tears it down, not simba's exit path.
  void leave();

  // Runs entry(arg), on the stack that ends at `stack_top`, in a new
  // process that is the watchdog's child (clone with CLONE_VM|CLONE_VFORK:
  // it returns once that process has exec'd or exited). `entry` must
  // call execve or _exit. The new process inherits simba's descriptors as
  // they were when the watchdog started, less the close-on-exec ones.
  // Returns its pid. Throws InternalError when it cannot (the watchdog is
  // gone, clone failed). Starts the watchdog when it is not running.
  pid_t spawn(int (*entry)(void*), void* arg, void* stack_top);
  // False where the watchdog is a fork (no system-call stubs for the
  // architecture): it cannot run code on simba's memory, so CMD stays
  // simba's child there, and a daemon CMD started outlives a killed simba.
  static bool can_spawn();
  // CMD's exit, relayed: true once `pid` (the last spawn()) has exited;
  // `wait_status` is as waitpid() gives it.
  bool take_exit(pid_t pid, int& wait_status) const;
  // CMD's stops (Ctrl-Z), relayed: true when it stopped again since the
  // last call, with the stopping signal.
  bool take_stop(int& signo);

  pid_t pid() const { return m_pid; }

  struct Shared;       // what the two share (nolibc/watchdog_shared.hpp)
  struct SpawnRequest; // spawn()'s request (nolibc/watchdog_shared.hpp)

private:
  bool alive() const;
  bool wake();
  bool arm(int64_t deadline_ms);

  pid_t m_pid = -1;
  sys::Fd m_fd;              // our end of the socketpair
  sys::Fd m_tfd;             // the timer we share with it (none: its own)
  Shared* shared() const;    // at the start of m_region; null without one
  char* m_region = nullptr;  // the Shared block and the watchdog's stack; kept for a restart
  pid_t m_pgid = 0;          // CMD's group, for a restarted watchdog
  bool m_left = false;       // leave(): the channel stays open until exit
  uint32_t m_stops_seen = 0; // take_stop()
};

} // namespace simba::process
