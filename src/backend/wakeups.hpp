#pragma once
// Wake-ups and hand-overs: how a backend wakes a waiting contender when the
// mutex may be free (or hands it the mutex outright), and tells an owner
// that its lease was revoked. Without them a contender wakes only on its
// timers; they make a hand-over fast and a forced release heard at once.
//
// One contender on one mutex (Backend::wakeups()) goes through this
// lifecycle; the driver (cli/driver.cpp) makes the calls:
//
//  1. Waiting: wait() before every poll. The first call joins the mutex's
//     FIFO queue of waiters and sets up the channel; later calls set it up
//     again after a loss (at most about once a second). It returns the
//     descriptor to poll (POLLIN), -1 while there is none. Right after the
//     call that queued it, look_after_queueing() says whether the waiter
//     must look at the mutex once: a release between its last try and the
//     queueing woke nobody.
//  2. Woken: when the descriptor is readable, wake() says what came: nothing
//     of ours, "look" (the mutex may be free: try to acquire), or a grant
//     (the release made us the owner: no acquire of our own; the release
//     took us out of the queue).
//  3. Owning: own() before every poll. An owner hears only of a forced
//     release of its lease (a "look": guard now). A waiter that became the
//     owner keeps its place in the queue meanwhile: leaving costs system
//     calls that the path from the hand-over to CMD's start must not pay,
//     no one else can release the mutex, and a release skips its own
//     caller's place.
//  4. Settled: settle(), once CMD has run for a few milliseconds (a quiet
//     moment, off the path of every hand-over): the owner leaves the queue,
//     and the backend does the upkeep that a release or an acquire would
//     otherwise do on that path (SQLite: the WAL checkpoint).
//  5. Waiting again (lead, schedule, a lost lease): wait() goes to the end
//     of the queue.
//  6. The end: the queue place goes with the backend.
//
// A waiter that died is skipped by the releases; one that is stuck delays
// the others until their timed wake-up. A release wakes only the first live
// waiter: one backend call per release however many wait. Where no release
// comes (a lease that ran out, a quarantine's end), the acquisition itself
// keeps the order: core/fifo.hpp.
#include "backend/backend.hpp"

#include <optional>
#include <string>

namespace simba::backend {

struct Wake {
  enum class Kind {
    none,  // nothing of ours (spurious)
    look,  // the mutex may be free (waiter), or was force-released (owner)
    grant, // the release handed the mutex over to us: `grant`
  };
  Kind kind = Kind::none;
  Grant grant;
  explicit operator bool() const { return kind != Kind::none; }
};

// A waiter's place in its queue (Wakeups::place()).
struct QueuePlace {
  int position = 0;
  int length = 0;
};

class Wakeups {
public:
  virtual ~Wakeups() = default;

  virtual int wait() = 0;
  virtual int own() = 0;
  virtual void settle() = 0;
  virtual Wake wake() = 0;
  // True when unknown.
  virtual bool look_after_queueing() const { return true; }
  // A waiter's place in the mutex's queue, for its notices: `position` (1:
  // next) of `length`; one not yet queued counts itself last. One read of
  // the queue, asked for only by a notice (never on the way from a release
  // to CMD); nullopt when the backend cannot tell.
  virtual std::optional<QueuePlace> place() { return std::nullopt; }
  // A warning the user should see once (e.g. SQLite: this waiter cannot use
  // the release notification, its hand-overs will be slow); empty when
  // there is none. The driver asks after every wait() and own().
  virtual std::string take_warning() { return {}; }
  // How the last warning was found, for -v (once, after take_warning()).
  virtual std::string take_detail() { return {}; }
};

// The wake-ups of a backend that has none: every descriptor is -1, so the
// contender wakes only on its timers.
Wakeups& no_wakeups();

// The lifecycle above for a backend with a queue of waiters and a channel,
// on four calls the backend implements. It keeps the one piece of state the
// lifecycle needs: the role the contender last had, and whether an owner
// still holds its place in the queue.
class QueueWakeups : public Wakeups {
public:
  int wait() final;
  int own() final;
  void settle() final;
  Wake wake() final;
  std::optional<QueuePlace> place() final { return queue_place(m_mutex, m_contender); }

  // For Backend::wakeups(): the contender and mutex the calls are about.
  void target(const std::string& mutex, const std::string& contender);

protected:
  // Sets the channel up for `contender` on `mutex` (again, after it broke;
  // another mutex or contender: leaves the former's queue first), and joins
  // the queue when `waiting` and not in it, or leaves it when not
  // `waiting`. Returns the descriptor, -1 while there is none.
  virtual int watch(const std::string& mutex, const std::string& contender, bool waiting) = 0;
  // The descriptor is readable: reads what came; true when it concerns us.
  virtual bool drain_wakeups() = 0;
  // After drain_wakeups() returned true: the grant it read, if the backend
  // hands the mutex over (Redis). Nothing: acquire as usual.
  virtual std::optional<Grant> take_grant() { return std::nullopt; }
  // settle()'s upkeep (see 4. above).
  virtual void upkeep() {}
  // place() of `contender` in the queue of `mutex`.
  virtual std::optional<QueuePlace> queue_place(const std::string&, const std::string&) {
    return std::nullopt;
  }

private:
  enum class Role {
    none,
    waiter,
    owner_in_queue, // became the owner as a waiter, not settled yet
    owner,
  };
  Role m_role = Role::none;
  int m_fd = -1; // the last watch()'s
  std::string m_mutex;
  std::string m_contender;
};

} // namespace simba::backend
