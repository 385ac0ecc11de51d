#pragma once
// The waiter queue and release notification of the SQLite backend: its
// wake-ups (backend/wakeups.hpp: watch, look_after_queueing, drain_wakeups,
// take_warning, upkeep) and the releases' side of them (wake_first_waiter,
// notify), on files in the notification directory beside the database,
// watched with inotify. The backend owns one Waiters and hands it out as
// its Backend::wakeups().
//
// The notify directory holds, per mutex, a broadcast file named by the
// mutex's hash (touched by a forced release: the owner hears of it) and one
// file per waiter, "<hash>.w.<enqueue ns>.<pid>[~<gives up at, epoch
// ms>]" (older simba's readers stop at the "~"): the FIFO of waiters,
// each holding its owner id and holder ("<owner id>\n<holder.hpp>"),
// made ready as "<hash>.j...." and renamed into the queue (join_queue). A
// release touches only the first live waiter's file. Each contender watches
// the files, not the directory: a directory watch would wake every waiter
// for every other waiter's turn and every departure.
#include "backend/wakeups.hpp"
#include "sys/fd.hpp"

#include <sys/types.h>

#include <cstdint>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace simba::backend::sqlite {

class Connection;
class DatabaseFiles;

class Waiters final : public QueueWakeups {
public:
  // `owner`: the backend, whose get() looks at the mutex once queued;
  // `files`: where the notification directory is, and who may use it;
  // `db`: the connection settle()'s upkeep checkpoints.
  Waiters(Backend& owner, const DatabaseFiles& files, Connection& db)
      : m_owner(owner), m_files(files), m_db(db) {}
  ~Waiters() override;
  Waiters(const Waiters&) = delete;
  Waiters& operator=(const Waiters&) = delete;

  bool look_after_queueing() const override { return m_look; }
  std::string take_warning() override;

  // A release that ended the lease: wakes the first live waiter; whether
  // one was woken.
  bool wake_first_waiter(const std::string& mutex);
  // --slots: a slot's release wakes the first live waiter that no release
  // woke already, or that was woken over k_slot_fallback_ms ago (its file's
  // mtime, which a wake sets, tells: core/slots.hpp). Those woken are
  // acquiring the slots freed before; counting them by the free slots the
  // release saw would skip the head when one took its slot meanwhile (the
  // wake comes after the commit).
  bool wake_next_waiter(const std::string& mutex);
  // A revocation: tells the owner and every waiter.
  void notify(const std::string& mutex);
  // --slots (core/slots.hpp: may_take_free_slot): the live waiters of
  // `mutex` queued before us (all of them when we are not in its queue),
  // counted up to `limit`, but those whose owner id is in `holders` (one
  // that took its slot leaves the queue only after its commit). Reads only.
  int live_ahead(const std::string& mutex, int limit, const std::vector<std::string>& holders);
  // --slots: we took a slot; out of the queue at once (not at settle()),
  // or the releases of the other slots would wake us, and the waiters
  // behind us would count us as one before them.
  void leave_with_slot() { leave_queue(); }

  // status: the live waiters of every mutex, in queue order, keyed by
  // queue_key(mutex). Reads only (a dead waiter's file stays).
  std::unordered_map<std::string, std::vector<Waiter>> queues();
  static std::string queue_key(const std::string& mutex);
  // When we joined the queue we are in (epoch ms); nullopt when in none.
  std::optional<int64_t> queued_at_ms() const;
  // Who we are, written into our waiter file when we queue, and when we
  // give up (0: never), in its name.
  void set_holder(const std::string& encoded, int64_t gives_up_at) {
    m_holder = encoded;
    m_gives_up_at = gives_up_at;
  }

  // Opening: an existing notification directory is checked now (refused:
  // UnavailableError); a missing one when it is made.
  void check_notify_directory();
  // The database is being opened again (it was replaced or removed) ...
  void drop_notify_directory();
  // ... and was: the watches and our place in the queue are set up there.
  void watch_again();

private:
  // QueueWakeups' calls (wakeups.hpp). The upkeep: the WAL checkpoint
  // (connection.hpp), off the path of every hand-over.
  int watch(const std::string& mutex, const std::string& contender, bool waiting) override;
  bool drain_wakeups() override;
  void upkeep() override;
  std::optional<QueuePlace> queue_place(const std::string& mutex, const std::string&) override;

  mode_t file_mode() const;
  mode_t dir_mode() const;
  bool shared_modes() const;
  int notify_directory(bool create);
  sys::Fd open_in_notify(const std::string& name, int flags);
  int watch_fd(int fd, uint32_t mask);
  void warn_no_notification();
  bool watch_broadcast();
  void join_queue();
  void leave_queue();
  std::vector<std::string> names_in_notify(int dir, const std::string& prefix);

  Backend& m_owner;
  const DatabaseFiles& m_files;
  Connection& m_db;
  sys::Fd m_notify_fd;           // the notification directory, once opened
  bool m_notify_checked = false; // it was checked (see trust.hpp)
  bool m_notify_scanned = false; // read before: seek back first
  std::string m_notify_problem;  // why it could not be used
  std::string m_warning;         // for take_warning()
  bool m_warned = false;
  sys::Fd m_watch_fd;
  std::string m_watch_name;
  int m_broadcast_wd = -1;   // the watch on the broadcast file
  int m_waiter_wd = -1;      // the watch on our own waiter file
  std::string m_waiter_file; // our place in the queue, when waiting
  sys::Fd m_waiter_fd;       // its flock says we are alive
  bool m_look = true;        // see look_after_queueing()
  bool m_waiting = false;    // the last watch() was a waiter's
  std::string m_holder;      // see set_holder()
  int64_t m_gives_up_at = 0; // see set_holder()
  std::string m_contender;   // the owner id of the last watch()
};

} // namespace simba::backend::sqlite
