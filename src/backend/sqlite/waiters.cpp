// The waiter queue and release notification of the SQLite backend
// (waiters.hpp).
#include "backend/sqlite/waiters.hpp"

#include "backend/backend.hpp"
#include "backend/holder.hpp"
#include "backend/sqlite/connection.hpp"
#include "backend/sqlite/database_files.hpp"
#include "backend/sqlite/trust.hpp"
#include "core/error.hpp"
#include "core/slots.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace simba::backend::sqlite {
namespace {

// The read that follows queueing (see look_after_queueing): short, a look
// is the fallback.
constexpr int64_t k_look_timeout_ms = 100;

// Test hook: SIMBA_TEST_QUEUE_PAUSE_MS makes a waiter pause between
// naming its file (the time in the name) and writing it, as a waiter that
// a busy host preempted there (e2e/test_slots_slow_joiner).
void pause_for_tests() {
  static const int ms = [] {
    const char* v = std::getenv("SIMBA_TEST_QUEUE_PAUSE_MS");
    return v ? std::atoi(v) % 1000 : 0;
  }();
  if (ms > 0) {
    timespec pause{0, long(ms) * 1000000};
    nanosleep(&pause, nullptr);
  }
}

std::string fnv1a_hex(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// A waiter's file in the notification directory `dir`, opened to read
// (its flock, its mtime, its content), never following a link.
sys::Fd open_waiter_file(int dir, const std::string& name) {
  return sys::Fd(openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
}

} // namespace

Waiters::~Waiters() {
  leave_queue();
  m_watch_fd.reset();
  drop_notify_directory();
}

std::string Waiters::queue_key(const std::string& mutex) { return fnv1a_hex(mutex); }

int Waiters::watch(const std::string& mutex, const std::string& contender, bool waiting) {
  m_contender = contender;
  std::string name = fnv1a_hex(mutex);
  if (!m_watch_fd || name != m_watch_name) {
    leave_queue();
    m_watch_fd.reset();
    m_waiting = waiting;
    m_watch_name = name;
    m_watch_fd.reset(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!m_watch_fd) {
      m_notify_problem = std::string("inotify: ") + errno_text(errno);
      warn_no_notification();
      return -1;
    }
    // Best effort: without it, a forced release reaches an owner at its
    // next renewal, a waiter at its next look. The queue is what a
    // waiter needs (join_queue warns).
    watch_broadcast();
  }
  m_waiting = waiting;
  if (waiting && m_waiter_file.empty()) {
    join_queue();
    // A read (no write lock), once queued.
    m_look =
        m_waiter_file.empty() || !held_by_other(m_owner.get(mutex, k_look_timeout_ms), contender);
  } else if (!waiting) {
    leave_queue();
  }
  return m_watch_fd.get();
}

std::string Waiters::take_warning() { return std::exchange(m_warning, std::string()); }

void Waiters::upkeep() { m_db.checkpoint_if_due(); }

bool Waiters::drain_wakeups() {
  if (!m_watch_fd) return false;
  bool ours = false;
  bool lost_watch = false;
  bool lost_place = false;
  alignas(struct inotify_event) char buf[4096];
  for (;;) {
    ssize_t n = read(m_watch_fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t off = 0; off < n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(buf + off);
      if (ev->mask & IN_Q_OVERFLOW) ours = true; // events were lost: may be ours
      // IN_IGNORED: the file went (someone cleaned the directory up).
      bool gone = ev->mask & IN_IGNORED;
      if (ev->wd == m_broadcast_wd && (gone || (ev->mask & IN_CLOSE_WRITE))) ours = true;
      if (ev->wd == m_broadcast_wd && gone) lost_watch = true;
      if (ev->wd == m_waiter_wd && (ev->mask & IN_ATTRIB)) ours = true;
      if (ev->wd == m_waiter_wd && gone) lost_place = true;
      off += static_cast<ssize_t>(sizeof(struct inotify_event) + ev->len);
    }
  }
  // A file went: watch a new one (a release may have been missed
  // meanwhile, hence the wake-up).
  if (lost_watch) watch_broadcast();
  if (lost_place) {
    ours = true;
    m_waiter_wd = -1;
    leave_queue();
    join_queue();
  }
  return ours;
}

void Waiters::check_notify_directory() {
  struct stat st;
  m_notify_checked = false;
  if (fstatat(m_files.dir_fd(), m_files.notify_name().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return;
  if (std::string why = m_files.notify_distrust(st); !why.empty())
    throw UnavailableError("refusing the notification directory " + m_files.notify_dir() + ": " +
                           why + sqlite_trust::k_sharing_hint);
  m_notify_checked = true;
}

// ---- The notification directory -------------------------------------------
// Everything in it is opened from its descriptor, never following a link
// (O_NOFOLLOW; O_NONBLOCK: a FIFO must not hang us). Files are made with
// the database's permissions, the directory with the matching search
// bits, so that whoever may use the database may use them (in a shared
// directory the group's setgid bit gives them its group).
mode_t Waiters::file_mode() const { return m_files.file_mode(); }
mode_t Waiters::dir_mode() const { return file_mode() | ((file_mode() & 0444) >> 2); }
// More than the owner's bits: the umask must not take them away (one
// fchmod per file made; none for a private database).
bool Waiters::shared_modes() const { return file_mode() != 0600; }

// The notification directory's descriptor (made when missing and
// `create`), or -1 (m_notify_problem says why, unless it is just missing).
int Waiters::notify_directory(bool create) {
  if (m_notify_fd) return m_notify_fd.get();
  const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  const int at = m_files.dir_fd();
  const char* name = m_files.notify_name().c_str();
  sys::Fd fd(openat(at, name, flags));
  bool made = false;
  if (!fd && errno == ENOENT && create) {
    made = mkdirat(at, name, dir_mode()) == 0;
    fd.reset(openat(at, name, flags));
  }
  if (!fd) {
    if (errno != ENOENT || create)
      m_notify_problem = m_files.notify_dir() + ": " + errno_text(errno);
    return -1;
  }
  if (made && shared_modes()) fchmod(fd.get(), dir_mode() | (m_files.dir_setgid() ? S_ISGID : 0));
  if (!m_notify_checked) { // made (by anyone) after the open's check
    struct stat st;
    std::string why = fstat(fd.get(), &st) != 0 ? errno_text(errno) : m_files.notify_distrust(st);
    if (!why.empty()) {
      m_notify_problem = "refusing " + m_files.notify_dir() + ": " + why;
      return -1;
    }
    m_notify_checked = true;
  }
  m_notify_fd = std::move(fd);
  m_notify_scanned = false;
  return m_notify_fd.get();
}

// It was removed: whoever makes it next, it is checked again.
void Waiters::drop_notify_directory() {
  m_notify_fd.reset();
  m_notify_checked = false;
}

// Opens `name` in the notification directory (made when missing); in a
// new one, once, when the one we had open was removed meanwhile.
sys::Fd Waiters::open_in_notify(const std::string& name, int flags) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    int dir = notify_directory(true);
    if (dir < 0) return sys::Fd();
    sys::Fd fd(openat(dir, name.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                      file_mode()));
    if (fd) {
      if ((flags & O_CREAT) && shared_modes()) fchmod(fd.get(), file_mode()); // EPERM: not ours, fine
      return fd;
    }
    if (errno != ENOENT) {
      m_notify_problem = m_files.notify_dir() + "/" + name + ": " + errno_text(errno);
      return sys::Fd();
    }
    drop_notify_directory();
  }
  return sys::Fd();
}

// Watches the file open at `fd` (the very file, not whatever its name
// leads to by then).
int Waiters::watch_fd(int fd, uint32_t mask) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  return inotify_add_watch(m_watch_fd.get(), path, mask);
}

// A waiter that cannot use the notification waits on its timer alone:
// it says so once.
void Waiters::warn_no_notification() {
  if (m_warned || !m_waiting) return;
  m_warned = true;
  m_warning = "cannot use the release notification (" +
              (m_notify_problem.empty() ? m_files.notify_dir() : m_notify_problem) +
              "): waiting without it, hand-overs will be slow";
}

// IN_CLOSE_WRITE on the broadcast file: a forced release. Created when
// missing (opened read-only, which raises no IN_CLOSE_WRITE).
bool Waiters::watch_broadcast() {
  sys::Fd fd = open_in_notify(m_watch_name, O_CREAT | O_RDONLY);
  if (!fd) return false;
  m_broadcast_wd = watch_fd(fd.get(), IN_CLOSE_WRITE);
  return m_broadcast_wd >= 0;
}

// After a reopen: the notify directory may have gone with the database.
void Waiters::watch_again() {
  if (!m_watch_fd) return;
  leave_queue();
  if (m_broadcast_wd >= 0) inotify_rm_watch(m_watch_fd.get(), m_broadcast_wd);
  m_broadcast_wd = -1;
  watch_broadcast();
  if (m_waiting) join_queue();
}

// The file is made ready under a name no release reads ("<hash>.j.",
// not ".w."), then renamed into the queue: a release that sees us can wake
// us (the watch is set), and sees no wake in its mtime.
void Waiters::join_queue() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts); // one host: one clock orders the queue
  char name[96];
  int n = snprintf(name, sizeof name, "%s.w.%020lld.%ld", m_watch_name.c_str(),
                   (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, long(getpid()));
  // --timeout's end, for status: after the pid, where an older simba's
  // strtol stops (so it reads the pid and the order as before).
  if (m_gives_up_at > 0 && n > 0 && size_t(n) < sizeof name)
    snprintf(name + n, sizeof name - size_t(n), "~%lld", (long long)m_gives_up_at);
  std::string ready = name;
  std::string making = ready;
  making[m_watch_name.size() + 1] = 'j';
  sys::Fd fd = open_in_notify(making, O_CREAT | O_EXCL | O_RDWR);
  if (!fd) { // the timed wake-up remains
    warn_no_notification();
    return;
  }
  // Held while we wait: the kernel drops it the instant we die, which is
  // how a releaser tells a live waiter from a dead one (a pid may be reused).
  flock(fd.get(), LOCK_EX);
  pause_for_tests();
  // Who waits, for status: one write, while waiting (not on a hand-over).
  std::string who = m_contender + '\n' + m_holder;
  ssize_t ignored = write(fd.get(), who.data(), who.size());
  (void)ignored;
  // The mtime is the name's time, not the write's: a slot's release
  // (wake_next_waiter) reads a later mtime as a wake, and a joiner that a
  // busy host preempted before its write looked woken already and was
  // skipped: its hand-over lost.
  const timespec times[2] = {{0, UTIME_OMIT}, ts};
  futimens(fd.get(), times);
  // IN_ATTRIB: a releaser touched it (our turn). (A rename raises none.)
  m_waiter_wd = watch_fd(fd.get(), IN_ATTRIB);
  if (renameat(m_notify_fd.get(), making.c_str(), m_notify_fd.get(), ready.c_str()) != 0) {
    m_notify_problem = m_files.notify_dir() + "/" + ready + ": " + errno_text(errno);
    unlinkat(m_notify_fd.get(), making.c_str(), 0);
    if (m_waiter_wd >= 0) inotify_rm_watch(m_watch_fd.get(), m_waiter_wd);
    m_waiter_wd = -1;
    warn_no_notification();
    return;
  }
  m_waiter_fd = std::move(fd);
  m_waiter_file = ready;
}

void Waiters::leave_queue() {
  if (m_waiter_file.empty()) return;
  // The watch first: unlinking raises IN_ATTRIB too.
  if (m_waiter_wd >= 0) inotify_rm_watch(m_watch_fd.get(), m_waiter_wd);
  m_waiter_wd = -1;
  if (m_notify_fd) unlinkat(m_notify_fd.get(), m_waiter_file.c_str(), 0);
  m_waiter_fd.reset();
  m_waiter_file.clear();
}

// The names in the notification directory that start with `prefix`.
std::vector<std::string> Waiters::names_in_notify(int dir, const std::string& prefix) {
  std::vector<std::string> names;
  if (m_notify_scanned) lseek(dir, 0, SEEK_SET);
  m_notify_scanned = true;
  alignas(8) char buf[8192];
  for (;;) {
    ssize_t n = getdents64(dir, buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t off = 0; off < n;) {
      auto* e = reinterpret_cast<struct dirent64*>(buf + off);
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
        names.emplace_back(e->d_name);
      off += e->d_reclen;
    }
  }
  return names;
}

// Removes the files of waiters that died (kill -9) on the way. One waiter
// per release: the others keep sleeping (no thundering herd).
bool Waiters::wake_first_waiter(const std::string& mutex) {
  int dir = notify_directory(false);
  if (dir < 0) return false;
  std::vector<std::string> waiters = names_in_notify(dir, fnv1a_hex(mutex) + ".w.");
  std::sort(waiters.begin(), waiters.end()); // by enqueue time
  for (const std::string& w : waiters) {
    long pid = std::strtol(w.c_str() + w.rfind('.') + 1, nullptr, 10);
    if (pid == long(getpid())) continue;
    sys::Fd fd = open_waiter_file(dir, w);
    if (!fd) continue; // it just left the queue (or is not a waiter's file)
    bool dead = flock(fd.get(), LOCK_EX | LOCK_NB) == 0; // a live waiter holds it
    if (dead) unlinkat(dir, w.c_str(), 0);
    // IN_ATTRIB: that waiter tries now. The file we opened, not a name.
    bool woke = !dead && futimens(fd.get(), nullptr) == 0;
    if (woke) return true;
  }
  return false;
}

int Waiters::live_ahead(const std::string& mutex, int limit,
                        const std::vector<std::string>& holders) {
  int dir = limit > 0 ? notify_directory(false) : -1;
  if (dir < 0) return 0;
  const std::string prefix = fnv1a_hex(mutex) + ".w.";
  std::vector<std::string> names = names_in_notify(dir, prefix);
  std::sort(names.begin(), names.end()); // by enqueue time
  bool queued = m_waiter_file.compare(0, prefix.size(), prefix) == 0;
  int live = 0;
  for (const std::string& name : names) {
    if (queued && name >= m_waiter_file) break; // we and those after us
    sys::Fd fd = open_waiter_file(dir, name);
    if (!fd) continue;
    bool alive = flock(fd.get(), LOCK_SH | LOCK_NB) != 0; // a live waiter holds its LOCK_EX
    if (alive && !holders.empty()) {
      char buf[512]; // "<owner id>\n<holder>" (join_queue)
      ssize_t n = pread(fd.get(), buf, sizeof buf, 0);
      std::string text(buf, n > 0 ? size_t(n) : 0);
      std::string owner = text.substr(0, text.find('\n'));
      alive = std::find(holders.begin(), holders.end(), owner) == holders.end();
    }
    if (alive && ++live >= limit) break;
  }
  return live;
}

bool Waiters::wake_next_waiter(const std::string& mutex) {
  int dir = notify_directory(false);
  if (dir < 0) return false;
  std::vector<std::string> waiters = names_in_notify(dir, fnv1a_hex(mutex) + ".w.");
  std::sort(waiters.begin(), waiters.end()); // by enqueue time
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts); // the clock of the names and of mtime
  const int64_t now = int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  // A file's mtime is the time in its name (join_queue sets it) until a
  // wake sets it: later by more than a file system's timestamp step is a wake.
  constexpr int64_t k_joined_slack_ns = 20000000;
  for (const std::string& w : waiters) {
    long pid = std::strtol(w.c_str() + w.rfind('.') + 1, nullptr, 10);
    if (pid == long(getpid())) continue;
    sys::Fd fd = open_waiter_file(dir, w);
    if (!fd) continue;
    if (flock(fd.get(), LOCK_EX | LOCK_NB) == 0) { // dead: nobody holds it
      unlinkat(dir, w.c_str(), 0);
      continue;
    }
    struct stat st;
    int64_t joined = std::strtoll(w.c_str() + w.find(".w.") + 3, nullptr, 10);
    int64_t touched =
        fstat(fd.get(), &st) == 0 ? int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec : joined;
    bool woken =
        touched > joined + k_joined_slack_ns && touched > now - core::k_slot_fallback_ms * 1000000;
    bool woke = !woken && futimens(fd.get(), nullptr) == 0;
    if (woke) return true;
  }
  return false;
}

// Closing a file opened for writing raises IN_CLOSE_WRITE for the
// watchers. Best effort: the waiters' timed wake-up remains.
void Waiters::notify(const std::string& mutex) {
  open_in_notify(fnv1a_hex(mutex), O_CREAT | O_WRONLY); // and closed at once
}

} // namespace simba::backend::sqlite

namespace simba::backend::sqlite {

std::optional<int64_t> Waiters::queued_at_ms() const {
  size_t at = m_waiter_file.find(".w.");
  if (at == std::string::npos) return std::nullopt;
  return std::strtoll(m_waiter_file.c_str() + at + 3, nullptr, 10) / 1000000;
}

// The live waiter files of `mutex` in queue order, ours among them.
std::optional<QueuePlace> Waiters::queue_place(const std::string& mutex, const std::string&) {
  int dir = notify_directory(false);
  if (dir < 0) return std::nullopt;
  std::vector<std::string> names = names_in_notify(dir, fnv1a_hex(mutex) + ".w.");
  std::sort(names.begin(), names.end()); // by enqueue time
  QueuePlace p;
  for (const std::string& name : names) {
    sys::Fd fd = open_waiter_file(dir, name);
    if (!fd) continue;
    bool live = flock(fd.get(), LOCK_SH | LOCK_NB) != 0; // ours too: a lock per open file
    if (!live) continue;
    ++p.length;
    if (name == m_waiter_file) p.position = p.length;
  }
  if (p.position == 0) p.position = ++p.length; // not queued yet: it joins last
  return p;
}

// A waiter file's name "<hash>.w.<enqueue ns>.<pid>" and content (see
// join_queue) as a Waiter; false when the file is not a live waiter's.
static bool read_waiter(int dir, const std::string& name, Waiter& w) {
  sys::Fd fd = open_waiter_file(dir, name);
  if (!fd) return false;
  bool live = flock(fd.get(), LOCK_SH | LOCK_NB) != 0; // a live waiter holds its LOCK_EX
  char buf[4096];
  ssize_t n = live ? read(fd.get(), buf, sizeof buf) : -1;
  if (!live) return false;
  std::string text(buf, n > 0 ? size_t(n) : 0);
  size_t eol = text.find('\n');
  w.owner_id = text.substr(0, eol);
  if (eol != std::string::npos) w.holder = decode_holder(text.substr(eol + 1));
  size_t at = name.find(".w.") + 3;
  w.since = std::strtoll(name.c_str() + at, nullptr, 10) / 1000000;
  if (size_t tilde = name.find('~', at); tilde != std::string::npos) {
    long long gives_up = std::strtoll(name.c_str() + tilde + 1, nullptr, 10);
    if (gives_up > 0) w.gives_up_at = gives_up;
  }
  return true;
}

std::unordered_map<std::string, std::vector<Waiter>> Waiters::queues() {
  std::unordered_map<std::string, std::vector<Waiter>> out;
  int dir = notify_directory(false);
  if (dir < 0) return out;
  std::vector<std::string> names = names_in_notify(dir, "");
  std::sort(names.begin(), names.end()); // by mutex, then by enqueue time
  for (const std::string& name : names) {
    size_t mark = name.find(".w.");
    Waiter w;
    if (mark == std::string::npos || !read_waiter(dir, name, w)) continue;
    out[name.substr(0, mark)].push_back(std::move(w));
  }
  return out;
}

} // namespace simba::backend::sqlite
