// SQLite backend (DESIGN §5.1): leases in one table of a local database file,
// release notification through inotify on a directory beside it.
#include "backend/sqlite_backend.hpp"

#include "backend/sqlite_trust.hpp"
#include "backend/wakeups.hpp"

#include "core/error.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <atomic>
#include <vector>
#include <chrono>
#include <random>
#include <thread>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace simba::backend {
namespace {

using sqlite_trust::directory_distrust;
using sqlite_trust::file_distrust;
using sqlite_trust::k_sharing_hint;

uid_t my_uid() { return sqlite_trust::this_process().uid; }

// The lease table. The wall-clock columns (acquired_at, ttl_at,
// transition_at: epoch ms) place a lease on the calendar for people and are
// what a simba of the first wave reads and writes; the boot_ columns time it
// on CLOCK_BOOTTIME of the boot `boot_id` (see Clocks). `boot_token` is the
// fencing token the boot_ columns were written with: a row whose token
// differs was last written by an older simba, which leaves the boot_
// columns as they were (see lease_of()). `holding` (1: the lease is only
// kept for --min-hold, Lease::holding) counts only in a row so stamped.
constexpr const char* k_sql_schema =
    "CREATE TABLE IF NOT EXISTS simba_mutex("
    "mutex TEXT PRIMARY KEY, owner_id TEXT NOT NULL, acquired_at INTEGER, "
    "ttl_at INTEGER, transition_at INTEGER, fencing_token INTEGER NOT NULL, "
    "boot_id TEXT, boot_acquired_at INTEGER, boot_ttl_at INTEGER, boot_transition_at INTEGER, "
    "boot_token INTEGER, holding INTEGER) WITHOUT ROWID";

// Added in place to a table made by an older simba (migrate_schema()).
constexpr const char* k_added_columns[] = {"boot_id TEXT",         "boot_acquired_at INTEGER",
                                           "boot_ttl_at INTEGER",  "boot_transition_at INTEGER",
                                           "boot_token INTEGER",   "holding INTEGER"};

#define SIMBA_SQL_ROW                                                                              \
  "owner_id, acquired_at, ttl_at, transition_at, fencing_token, boot_id, boot_acquired_at, "      \
  "boot_ttl_at, boot_transition_at, boot_token, holding"

constexpr const char* k_sql_select = "SELECT " SIMBA_SQL_ROW " FROM simba_mutex WHERE mutex = ?1";

constexpr const char* k_sql_list = "SELECT mutex, " SIMBA_SQL_ROW " FROM simba_mutex ORDER BY mutex";

constexpr const char* k_sql_upsert =
    "INSERT INTO simba_mutex(mutex, " SIMBA_SQL_ROW ") "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT(mutex) DO UPDATE SET "
    "owner_id = excluded.owner_id, acquired_at = excluded.acquired_at, ttl_at = excluded.ttl_at, "
    "transition_at = excluded.transition_at, fencing_token = excluded.fencing_token, "
    "boot_id = excluded.boot_id, boot_acquired_at = excluded.boot_acquired_at, "
    "boot_ttl_at = excluded.boot_ttl_at, boot_transition_at = excluded.boot_transition_at, "
    "boot_token = excluded.boot_token, holding = excluded.holding";

// Filesystem magic numbers (linux/magic.h) of the network filesystems on
// which SQLite's locking is not safe.
constexpr long k_nfs_magic = 0x6969;
constexpr long k_smb_magic = 0x517B;
constexpr long k_cifs_magic = 0xFF534D42;
constexpr long k_smb2_magic = 0xFE534D42;

constexpr int k_checkpoint_pages = 32; // see configure_connection()
constexpr int k_checkpoint_overdue_pages = 4 * k_checkpoint_pages;
// The read that follows queueing (see look_after_queueing): short, a look
// is the fallback.
constexpr int64_t k_look_timeout_ms = 100;

// Opening may race with another process creating the database.
constexpr int k_open_busy_timeout_ms = 5000;

// strerror(), lower case ("permission denied"), for the middle of a line.
std::string errno_text(int err) {
  std::string t = std::strerror(err);
  if (!t.empty() && t[0] >= 'A' && t[0] <= 'Z' && !(t.size() > 1 && t[1] >= 'A' && t[1] <= 'Z'))
    t[0] = static_cast<char>(t[0] - 'A' + 'a');
  return t;
}

std::string dir_name(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

std::string absolute_path(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[PATH_MAX];
  if (!getcwd(buf, sizeof buf))
    throw UnavailableError("cannot resolve " + path + ": " + errno_text(errno));
  return std::string(buf) + "/" + path;
}

// mkdir -p with mode 0700 for every directory it creates; existing ones are
// left as they are. Only for the default location (SqliteOpen).
void make_directories(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      throw UnavailableError("cannot create " + dir + ": " + errno_text(ENOTDIR));
    return;
  }
  size_t pos = 1;
  while (pos <= dir.size()) {
    size_t next = dir.find('/', pos);
    if (next == std::string::npos) next = dir.size();
    std::string prefix = dir.substr(0, next);
    pos = next + 1;
    if (prefix.empty() || prefix.back() == '/') continue;
    if (mkdir(prefix.c_str(), 0700) == 0) continue;
    int err = errno;
    if (err == EEXIST && stat(prefix.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) continue;
      err = ENOTDIR;
    }
    throw UnavailableError("cannot create " + prefix + ": " + errno_text(err));
  }
}

// Test hook: SIMBA_TEST_FSTYPE=nfs (or smb, cifs) makes the check below
// believe the database is on that filesystem, since tests cannot mount one.
const char* network_fs_name(int dir_fd) {
  if (const char* fake = std::getenv("SIMBA_TEST_FSTYPE")) {
    std::string f = fake;
    if (f == "nfs") return "NFS";
    if (f == "smb" || f == "cifs" || f == "smb2") return "SMB/CIFS";
  }
  struct statfs sf;
  if (fstatfs(dir_fd, &sf) != 0) return nullptr; // the open will report it
  long type = static_cast<long>(static_cast<unsigned int>(sf.f_type));
  if (type == k_nfs_magic) return "NFS";
  if (type == k_smb_magic || type == k_cifs_magic || type == k_smb2_magic) return "SMB/CIFS";
  return nullptr;
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

// Test hook: the wall clock SQLite sees (julianday('now'), and the VFS's
// clock) runs a set number of milliseconds ahead of the system's (behind,
// when negative), as after a step of the system clock, which a test cannot
// make. A copy of the default VFS with only its clock replaced, installed
// as the default for connections opened from then on; set from
// SIMBA_TEST_WALL_CLOCK_SHIFT_MS at the first open, or by the backend tests.
std::atomic<int64_t> g_wall_shift_ms{0};
sqlite3_vfs* g_system_vfs = nullptr;
sqlite3_vfs g_shifted_vfs;

int shifted_time_int64(sqlite3_vfs*, sqlite3_int64* out) {
  int rc = g_system_vfs->xCurrentTimeInt64(g_system_vfs, out);
  *out += g_wall_shift_ms.load();
  return rc;
}

int shifted_time(sqlite3_vfs*, double* out) {
  sqlite3_int64 ms = 0;
  int rc = shifted_time_int64(nullptr, &ms);
  *out = double(ms) / 86400000.0;
  return rc;
}

void install_shifted_clock() {
  if (g_system_vfs) return;
  g_system_vfs = sqlite3_vfs_find(nullptr);
  g_shifted_vfs = *g_system_vfs;
  g_shifted_vfs.zName = "simba-shifted-clock";
  g_shifted_vfs.pNext = nullptr;
  g_shifted_vfs.xCurrentTime = shifted_time;
  g_shifted_vfs.xCurrentTimeInt64 = shifted_time_int64;
  sqlite3_vfs_register(&g_shifted_vfs, 1);
}

// Process-wide settings, before SQLite initializes itself. A simba run
// opens one connection, runs a handful of statements and exits, so the
// memory SQLite sets up in advance is touched once and then wasted: every
// page of it is a page fault (a few microseconds each on a VM). No
// lookaside (it carves and links 100 slots of 1200 bytes at open), no bulk
// page-cache allocation (20 pages at open), no memory statistics (a mutex
// and counters on every allocation).
void configure_sqlite() {
  static bool done = false;
  if (done) return;
  done = true;
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  sqlite3_config(SQLITE_CONFIG_LOOKASIDE, 0, 0);
  sqlite3_config(SQLITE_CONFIG_PAGECACHE, static_cast<void*>(nullptr), 0, 0);
  if (const char* shift = std::getenv("SIMBA_TEST_WALL_CLOCK_SHIFT_MS"))
    testing::shift_sqlite_wall_clock(std::strtoll(shift, nullptr, 10));
}

bool is_busy(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

// The two clocks of one operation. Leases are timed on CLOCK_BOOTTIME: every
// process of the host shares it, it never steps (NTP, `date -s`) and it
// counts a suspend. It starts again at a reboot, hence the boot id stored
// with each lease: a lease of an earlier boot is over. The wall clock (the
// one SQLite's VFS reads, epoch ms) only places a lease on the calendar for
// people and seeds the fencing tokens (next_token()).
struct Clocks {
  int64_t boot = 0;
  int64_t wall = 0;
};

// Julian day of the Unix epoch in milliseconds (SQLite's VFS clock).
constexpr int64_t k_unix_epoch_julian_ms = 210866760000000;

Clocks clocks_now(sqlite3_vfs* vfs) {
  Clocks c;
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  c.boot = int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
  sqlite3_int64 julian_ms = 0;
  vfs->xCurrentTimeInt64(vfs, &julian_ms);
  c.wall = julian_ms - k_unix_epoch_julian_ms;
  return c;
}

// A new random id at every boot; read once per process. Empty if unreadable.
const std::string& boot_id() {
  static const std::string id = [] {
    char buf[64] = {};
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return std::string();
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    std::string s(buf, n > 0 ? size_t(n) : 0);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }();
  return id;
}

// One row of simba_mutex as stored.
struct Row {
  bool exists = false;
  core::Lease wall; // the wall-clock columns
  std::string boot_id;
  int64_t boot_acquired_at = 0, boot_ttl_at = 0, boot_transition_at = 0;
  bool boot_stamped = false; // boot_ columns written with this row's token
};

// The stored lease on this boot's CLOCK_BOOTTIME, the clock every decision
// uses:
// * stamped by this boot: its boot_ columns;
// * stamped by an earlier boot: over (ttl_at and transition_at now at the
//   latest), whatever its times said;
// * not stamped (last written by a simba of the first wave, which times
//   leases on the wall clock and may still be running during an upgrade):
//   judged on the wall clock, as its writer judges it; its wall times are
//   moved onto the boot clock at this operation's instant. Such a row is
//   exposed to wall-clock steps as before; the first write by this simba
//   stamps it.
core::Lease lease_of(const Row& row, const Clocks& c) {
  core::Lease l = row.wall;
  if (!row.exists) return l;
  if (row.boot_stamped && row.boot_id == boot_id()) {
    l.acquired_at = row.boot_acquired_at;
    l.ttl_at = row.boot_ttl_at;
    l.transition_at = row.boot_transition_at;
    return l;
  }
  l.acquired_at = c.boot + (row.wall.acquired_at - c.wall);
  l.ttl_at = c.boot + (row.wall.ttl_at - c.wall);
  l.transition_at = c.boot + (row.wall.transition_at - c.wall);
  if (row.boot_stamped) { // an earlier boot
    l.ttl_at = std::min(l.ttl_at, c.boot);
    l.transition_at = std::min(l.transition_at, c.boot);
  }
  return l;
}

// A lease on the boot clock as replies and the wall-clock columns give it:
// moved by `boot_to_wall` (wall minus boot clock), so that every distance
// from `now` is the boot clock's. Every delay is computed from differences
// with the reply's `now` (DESIGN §3), so the contend logic sees exactly the
// boot clock; status and SIMBA_ACQUIRED_AT see calendar times.
core::Lease on_wall_clock(core::Lease l, int64_t boot_to_wall) {
  l.acquired_at += boot_to_wall;
  l.ttl_at += boot_to_wall;
  l.transition_at += boot_to_wall;
  return l;
}

// The two clocks are read one after the other, each rounded to the
// millisecond: their difference wobbles by a millisecond from one reading to
// the next. It changes for real only when the wall clock steps; a smaller
// change is the wobble, and the last difference is kept, so that a lease
// shows the same times in every reply of a process.
constexpr int64_t k_wall_step_ms = 10;

// What an operation decided to write, if anything.
struct Decision {
  bool write = false;
  core::Lease lease;
};

class SqliteBackend final : public Backend, public QueueWakeups {
public:
  SqliteBackend(std::string path, const SqliteOpen& how)
      : m_path(std::move(path)), m_given_path(m_path), m_how(how) {
    m_base = base_name(m_path);
    m_notify_name = m_base + ".notify";
    m_notify_dir = m_path + ".notify";
  }

  ~SqliteBackend() override {
    leave_queue();
    if (m_watch_fd >= 0) close(m_watch_fd);
    close_database();
    drop_notify_directory();
    if (m_dir_fd >= 0) close(m_dir_fd);
  }

  SqliteBackend(const SqliteBackend&) = delete;
  SqliteBackend& operator=(const SqliteBackend&) = delete;

  // Opens the database at the path: its directory (checked: see Trust; the
  // default location's made when missing), the file (checked; created when
  // allowed), the notification directory (checked, if it exists), then the
  // connection and the schema. Throws UnavailableError when the database
  // cannot be used.
  void open_database() {
    open_directory();
    if (const char* fs = network_fs_name(m_dir_fd))
      throw UnavailableError("refusing the database " + m_path + " on a network filesystem (" + fs +
                             "): SQLite locking is not safe there; use a local path or Redis");
    check_notify_directory(); // before a new database is made beside it
    struct stat file = database_file();
    m_dev = file.st_dev;
    m_ino = file.st_ino;
    m_file_mode = file.st_mode & 0666;
    if (m_public) claim_wal_files(file);
    connect();
    // The connection's own VFS: its clock is the wall clock of Clocks.
    sqlite3_file_control(m_db, "main", SQLITE_FCNTL_VFS_POINTER, &m_vfs);
    if (!m_vfs) m_vfs = sqlite3_vfs_find(nullptr);
    // The checkpoint when the last connection closes costs about half a
    // millisecond per run; the automatic checkpoint on commit keeps the WAL
    // bounded anyway.
    sqlite3_db_config(m_db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    initialize();
  }

  // The database's directory, as a descriptor everything beside the
  // database is opened from. The path is resolved once (one database, one
  // name: describe() serves re-entry detection).
  void open_directory() {
    if (m_dir_fd >= 0) close(m_dir_fd);
    m_dir_fd = -1;
    std::string dir = dir_name(m_path);
    int fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && m_how.create_directories) {
      make_directories(dir);
      fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    if (fd < 0) {
      int err = errno;
      if (err == ENOENT && !m_how.create_file)
        throw UnavailableError("no simba database at " + m_path + " (no directory " + dir + ")");
      if (err == ENOENT)
        throw UnavailableError("the directory " + dir +
                               " of the database does not exist (simba makes only the default "
                               "location's; create it, or check the path)");
      throw UnavailableError("cannot open the directory " + dir + ": " + errno_text(err));
    }
    m_dir_fd = fd;
    if (fstat(fd, &m_dir_st) != 0)
      throw UnavailableError("cannot open the directory " + dir + ": " + errno_text(errno));
    if (std::string why = directory_distrust(m_dir_st, true, nullptr); !why.empty())
      throw UnavailableError("refusing the database directory " + dir + ": " + why + k_sharing_hint);
    // Its group's writing was accepted above only for one of our groups.
    m_group_shared = (m_dir_st.st_mode & S_IWGRP) && (m_dir_st.st_mode & S_ISGID);
    m_public = (m_dir_st.st_mode & S_IWOTH) != 0; // and sticky
    if (!m_resolved) resolve_path(dir);
  }

  void resolve_path(const std::string& dir) {
    m_resolved = true;
    char link[64];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", m_dir_fd);
    char buf[PATH_MAX];
    ssize_t n = readlink(link, buf, sizeof buf - 1);
    std::string resolved;
    if (n > 0 && buf[0] == '/') {
      resolved.assign(buf, static_cast<size_t>(n));
    } else if (realpath(dir.c_str(), buf)) { // no /proc
      resolved = buf;
    } else {
      return;
    }
    m_path = resolved + (resolved == "/" ? "" : "/") + m_base;
    m_notify_dir = m_path + ".notify";
  }

  // The database file, checked; created when missing and allowed.
  struct stat database_file() {
    struct stat st;
    if (fstatat(m_dir_fd, m_base.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) throw UnavailableError("cannot open " + m_path + ": " + errno_text(errno));
      if (!m_how.create_file) throw UnavailableError("no simba database at " + m_path);
      create_database_file();
      if (fstatat(m_dir_fd, m_base.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        throw UnavailableError("cannot open " + m_path + ": " + errno_text(errno));
    }
    if (S_ISDIR(st.st_mode)) throw UnavailableError("cannot open " + m_path + ": " + errno_text(EISDIR));
    if (std::string why = file_distrust(st, shared_gid()); !why.empty())
      throw UnavailableError("refusing the database " + m_path + ": " + why + k_sharing_hint);
    return st;
  }

  // 0600; 0660 in a shared directory (setgid, writable by its group), for
  // the group's other members.
  void create_database_file() {
    check_links_on_the_way();
    mode_t mode = m_group_shared ? 0660 : 0600;
    int fd = openat(m_dir_fd, m_base.c_str(),
                    O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
    if (fd < 0) {
      if (errno == EEXIST) return; // another process was quicker (checked by the caller)
      throw UnavailableError("cannot create " + m_path + ": " + errno_text(errno));
    }
    if (m_group_shared) fchmod(fd, mode); // the umask may have taken the group's bits
    close(fd);
  }

  // A database is made only where the path leads through links we trust:
  // another user's symlink on the way (planted in /tmp, say) could make root
  // create its files in any directory root may write. Checked when the
  // file is made (not on the hot path); links inside a link's target are
  // not followed here.
  void check_links_on_the_way() const {
    const std::string dir = dir_name(m_given_path);
    for (size_t pos = 1; pos <= dir.size();) {
      size_t next = dir.find('/', pos);
      if (next == std::string::npos) next = dir.size();
      std::string prefix = dir.substr(0, next);
      pos = next + 1;
      struct stat st;
      if (lstat(prefix.c_str(), &st) == 0 && S_ISLNK(st.st_mode) && st.st_uid != my_uid() && st.st_uid != 0)
        throw UnavailableError("refusing to create " + m_given_path + ": the path goes through " + prefix +
                               ", a symbolic link of another user (uid " + std::to_string(st.st_uid) +
                               ")" + k_sharing_hint);
    }
  }

  const gid_t* shared_gid() const { return m_group_shared ? &m_dir_st.st_gid : nullptr; }

  std::string notify_distrust(const struct stat& st) const {
    if (S_ISLNK(st.st_mode)) return "it is a symbolic link";
    if (!S_ISDIR(st.st_mode)) return "it is not a directory";
    return directory_distrust(st, false, shared_gid());
  }

  // An existing notification directory is checked now (refused: exit 69);
  // a missing one when it is made (notify_directory()).
  void check_notify_directory() {
    struct stat st;
    m_notify_checked = false;
    if (fstatat(m_dir_fd, m_notify_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    if (std::string why = notify_distrust(st); !why.empty())
      throw UnavailableError("refusing the notification directory " + m_notify_dir + ": " + why +
                             k_sharing_hint);
    m_notify_checked = true;
  }

  // In a directory everyone may write (sticky, like /tmp) another user
  // could make the -wal or -shm file before SQLite does; SQLite opens them
  // without following a link, but would use a file someone else made. So
  // they must be ours or the database owner's, and are made here (before
  // anyone else can) when missing.
  void claim_wal_files(const struct stat& db) {
    for (const char* suffix : {"-wal", "-shm"}) {
      std::string name = m_base + suffix;
      if (m_how.create_file) {
        int fd = openat(m_dir_fd, name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                        m_file_mode);
        if (fd >= 0) {
          close(fd);
          continue;
        }
      }
      struct stat st;
      if (fstatat(m_dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue; // SQLite's turn
      if (!S_ISREG(st.st_mode) || (st.st_uid != db.st_uid && st.st_uid != my_uid()) ||
          (st.st_mode & S_IWOTH))
        throw UnavailableError("refusing the database " + m_path + ": its " + suffix +
                               " file was made by another user (uid " + std::to_string(st.st_uid) +
                               ") in a directory everyone can write" + k_sharing_hint);
    }
  }

  void connect() {
    configure_sqlite();
    int rc = sqlite3_open_v2(m_path.c_str(), &m_db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = permission_problem();
      if (msg.empty()) msg = "cannot open " + m_path + ": " + (m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc));
      close_database();
      throw UnavailableError(msg);
    }
  }

  // Which of the database's files we lack the permission for, as an error
  // line; empty when none (then it is another problem).
  std::string permission_problem() const {
    bool missing = false;
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::string name = m_base + suffix;
      if (faccessat(m_dir_fd, name.c_str(), R_OK | W_OK, AT_EACCESS) == 0) continue;
      if (errno == ENOENT) {
        missing = true;
        continue;
      }
      int err = errno;
      if (err == EACCES && faccessat(m_dir_fd, name.c_str(), R_OK, AT_EACCESS) == 0)
        return "cannot open " + m_path + suffix + " for writing: " + errno_text(err);
      return "cannot open " + m_path + suffix + ": " + errno_text(err);
    }
    if (missing && faccessat(m_dir_fd, ".", W_OK, AT_EACCESS) != 0)
      return "cannot create the -wal and -shm files of " + m_path + " in " + dir_name(m_path) + ": " +
             errno_text(errno);
    return {};
  }

  // status by a user who may only read the database: the -shm file cannot be
  // set up when missing (or in an unwritable directory), and SQLite says
  // "readonly". Without a -wal file holding anything, the database file is
  // all there is: read it as immutable (no locks, no -shm: a write at that
  // very moment may be missed, as by a look a moment earlier).
  bool open_immutable() {
    struct stat st;
    if (fstatat(m_dir_fd, (m_base + "-wal").c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_size > 0)
      return false;
    close_database();
    std::string uri = "file:";
    for (unsigned char c : m_path) {
      if (c == '%' || c == '?' || c == '#' || c < 0x21 || c > 0x7e) {
        char hex[4];
        std::snprintf(hex, sizeof hex, "%%%02X", c);
        uri += hex;
      } else {
        uri += static_cast<char>(c);
      }
    }
    uri += "?immutable=1";
    int rc = sqlite3_open_v2(uri.c_str(), &m_db,
                             SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                             nullptr);
    if (rc != SQLITE_OK) {
      close_database();
      return false;
    }
    sqlite3_file_control(m_db, "main", SQLITE_FCNTL_VFS_POINTER, &m_vfs);
    if (!m_vfs) m_vfs = sqlite3_vfs_find(nullptr);
    return true;
  }

  // Makes sure the schema exists (creating the database when it is new,
  // adding the boot_ columns to one made by an older simba).
  void initialize() {
    set_busy_timeout(k_open_busy_timeout_ms);
    bool read_only = sqlite3_db_readonly(m_db, "main") == 1;
    if (read_only && !m_how.read_only_ok) {
      std::string msg = permission_problem();
      throw UnavailableError(msg.empty() ? "cannot open " + m_path + " for writing: read-only" : msg);
    }
    bool immutable = false;
    for (int attempt = 0;; ++attempt) {
      sqlite3_stmt* probe = nullptr;
      int rc = sqlite3_prepare_v3(m_db, k_sql_select, -1, SQLITE_PREPARE_PERSISTENT, &probe, nullptr);
      if (rc == SQLITE_OK) {
        m_stmts[k_select] = probe;
        configure_connection();
        return;
      }
      if ((rc & 0xff) == SQLITE_NOTADB)
        throw UnavailableError(m_path + " is not a SQLite database");
      if (read_only && !immutable && (rc & 0xff) == SQLITE_READONLY && open_immutable()) {
        immutable = true;
        set_busy_timeout(k_open_busy_timeout_ms);
        continue;
      }
      std::string msg = sqlite3_errmsg(m_db);
      if ((rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_READONLY ||
          sqlite3_system_errno(m_db) == EACCES)
        if (std::string denied = permission_problem(); !denied.empty()) throw UnavailableError(denied);
      if (!m_how.create_file && msg.find("no such table") != std::string::npos)
        throw UnavailableError("no simba database at " + m_path + " (the file has no simba_mutex table)");
      if (attempt == 0 && msg.find("no such column") != std::string::npos) {
        migrate_schema();
        continue;
      }
      if (attempt > 0 || msg.find("no such table") == std::string::npos)
        throw UnavailableError("cannot open " + m_path + ": " + msg);
      // A new database. journal_mode is stored in the file, so it is set only
      // here: the pragma costs a noticeable part of a run when repeated.
      set_wal_mode();
      exec_or_throw((std::string("BEGIN IMMEDIATE; ") + k_sql_schema + "; COMMIT").c_str());
    }
  }

  // A table made by an older simba gets the boot_ columns, empty: its rows
  // keep being judged on the wall clock (lease_of()) until this simba
  // writes them. Older simba processes still running go on with their own
  // columns. Several processes may migrate at once: a column another one
  // added meanwhile is fine.
  void migrate_schema() {
    exec_or_throw("BEGIN IMMEDIATE");
    for (const char* column : k_added_columns) {
      char* err = nullptr;
      std::string sql = std::string("ALTER TABLE simba_mutex ADD COLUMN ") + column;
      if (sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errmsg(m_db);
        sqlite3_free(err);
        if (msg.find("duplicate column") == std::string::npos) {
          rollback_if_open();
          throw UnavailableError("cannot update the schema of " + m_path + ": " + msg);
        }
      }
    }
    exec_or_throw("COMMIT");
  }

  // Switching to WAL needs an exclusive lock. When several processes create
  // the database at once, SQLite may report a deadlock as SQLITE_BUSY at once
  // (no busy handler) or leave the mode unchanged: retry for a while.
  void set_wal_mode() {
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(k_open_busy_timeout_ms);
    std::mt19937 rng(static_cast<unsigned>(getpid()));
    for (;;) {
      sqlite3_stmt* s = nullptr;
      int rc = sqlite3_prepare_v2(m_db, "PRAGMA journal_mode=WAL", -1, &s, nullptr);
      std::string mode;
      if (rc == SQLITE_OK) {
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
          mode = column_text(s, 0);
          rc = SQLITE_OK;
        }
      }
      std::string msg = sqlite3_errmsg(m_db);
      sqlite3_finalize(s);
      if (rc == SQLITE_OK && mode == "wal") return;
      if (rc != SQLITE_OK && !is_busy(rc))
        throw UnavailableError("cannot initialize " + m_path + ": " + msg);
      if (std::chrono::steady_clock::now() > deadline)
        throw UnavailableError("cannot initialize " + m_path + ": database is locked");
      std::this_thread::sleep_for(std::chrono::microseconds(500 + rng() % 2000));
    }
  }

  // synchronous=NORMAL: in WAL mode a commit does not fsync; a power loss
  // may lose the last commits but never corrupts the file. Token safety: see
  // next_token().
  // wal_autocheckpoint: the first connection to open the database (nearly
  // every simba run) rebuilds the WAL index by reading every frame written
  // since the last checkpoint (the WAL is not checkpointed on close), and a
  // checkpoint costs two fsyncs. The table is WITHOUT ROWID, so a run (acquire
  // + release) writes 2 pages. Measured with scripts/bench-style runs of
  // `simba run -- true` (mean / median, flock 3.2 ms): 10 pages 4.1/3.9 ms,
  // 32 pages 3.8/3.8 ms, 100 pages 4.1/4.1 ms, 200 pages 4.1/4.1 ms.
  //
  // The checkpoint is ours, not SQLite's automatic one: that one runs inside
  // whichever commit crosses the limit, and a checkpoint waits for two fsyncs
  // (from a millisecond to over ten here). Inside a release or an acquire it
  // lands on the hand-over's path; right after a release that woke the next
  // owner, its fsyncs hold up that owner's commit (traced: a WAL write of the
  // acquire waited a millisecond behind them). So commits only count the
  // WAL's pages (wal_hook), and the checkpoint runs in an owner's upkeep()
  // (CMD started a few milliseconds ago), after a renewal's commit, or in a
  // release that woke nobody; a release that handed over leaves it to the
  // next owner's upkeep, unless CMDs are so short that the WAL reached
  // k_checkpoint_overdue_pages (then a passive one, as it has to be).
  void configure_connection() {
    sqlite3_exec(m_db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
    sqlite3_wal_hook(
      m_db,
      [](void* self, sqlite3*, const char*, int pages) {
        static_cast<SqliteBackend*>(self)->m_wal_pages = pages;
        return SQLITE_OK;
      },
      this);
  }

  // TRUNCATE: with no other connection (a run after a run) the WAL ends up
  // empty, so the next process has nothing to read back. Without it, the
  // next process, the first to attach, rebuilds the WAL index from the WAL
  // file, forgets what was checkpointed, and the WAL grows for ever. With
  // the busy handler off it never waits: another connection at work (the
  // next owner's acquire) makes it a passive checkpoint, and that connection
  // keeps the WAL index, which lets the next writer start the WAL over.
  // After a hand-over (a waiter was woken) only a passive one: TRUNCATE
  // takes the write lock for a moment, which the new owner's acquire would
  // find taken. The new owner's connection keeps the index meanwhile.
  void checkpoint_if_due(bool handing_over = false) {
    if (m_wal_pages < (handing_over ? k_checkpoint_overdue_pages : k_checkpoint_pages)) return;
    m_wal_pages = 0; // the next commit counts again
    set_busy_timeout(0);
    sqlite3_wal_checkpoint_v2(m_db, nullptr,
                              handing_over ? SQLITE_CHECKPOINT_PASSIVE : SQLITE_CHECKPOINT_TRUNCATE,
                              nullptr, nullptr);
  }

  // SQLite's own busy handler sleeps 1, 2, 5, 10... ms between tries: one
  // collision with another process's transaction (a tenth of a millisecond)
  // would cost a millisecond or more, on a hand-over's path too. This one
  // tries again after 50 us, doubling up to 2 ms, until `ms` have passed.
  void set_busy_timeout(int64_t ms) {
    m_busy_until_ns = mono_ns() + std::max<int64_t>(ms, 0) * 1000000;
    sqlite3_busy_handler(m_db, &busy_handler, this);
  }

  static int busy_handler(void* self, int count) {
    auto* b = static_cast<SqliteBackend*>(self);
    int64_t left = b->m_busy_until_ns - mono_ns();
    if (left <= 0) return 0;
    int64_t pause = std::min<int64_t>(int64_t(50000) << std::min(count, 6), 2000000);
    pause = std::min(pause, left);
    timespec ts{0, long(pause)};
    nanosleep(&ts, nullptr);
    return 1;
  }

  static int64_t mono_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }

  Reply acquire(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                int64_t transition_ms, int64_t timeout_ms) override {
    return write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
      Decision d;
      d.lease = cur;
      if (cur.free_at(now) && held_before_reopen(mutex, contender, now)) {
        d.lease = m_before_reopen->lease; // not before it would have ended
        return d;
      }
      d.lease.holding = false; // written only if d.write
      if (cur.free_at(now)) {
        d.write = true;
        d.lease.owner_id = contender;
        d.lease.acquired_at = now;
        d.lease.fencing_token = next_token(cur.fencing_token, m_clocks.wall);
      } else if (cur.owner_id == contender) {
        d.write = true; // renewal keeps acquired_at and the token
      } else {
        return d;
      }
      d.lease.ttl_at = now + ttl_ms;
      d.lease.transition_at = d.lease.ttl_at + transition_ms;
      return d;
    });
  }

  Reply guard(const std::string& mutex, const std::string& contender, uint64_t token,
              int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    return renew(mutex, contender, token, ttl_ms, transition_ms, false, timeout_ms);
  }

  Reply hold(const std::string& mutex, const std::string& contender, uint64_t token,
             int64_t hold_ms, int64_t timeout_ms) override {
    return renew(mutex, contender, token, hold_ms, 0, true, timeout_ms);
  }

  // guard and hold: a compare-and-set on owner and token.
  Reply renew(const std::string& mutex, const std::string& contender, uint64_t token,
              int64_t ttl_ms, int64_t transition_ms, bool holding, int64_t timeout_ms) {
    Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
      Decision d;
      d.lease = cur;
      if (!cur.owned_by(contender, now) || cur.fencing_token != token) return d;
      d.write = true;
      d.lease.ttl_at = now + ttl_ms;
      d.lease.transition_at = d.lease.ttl_at + transition_ms;
      d.lease.holding = holding;
      return d;
    });
    checkpoint_if_due();
    return r;
  }

  Reply release(const std::string& mutex, const std::string& contender, uint64_t token,
                int64_t timeout_ms) override {
    Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
      Decision d;
      d.lease = cur;
      if (!cur.owned_by(contender, now) || !token_matches(cur, token)) return d;
      end_lease(d, now);
      return d;
    });
    bool woke = r.changed && wake_first_waiter(mutex);
    checkpoint_if_due(woke);
    return r;
  }

  Reply force_release(const std::string& mutex, uint64_t token, int64_t timeout_ms) override {
    Reply r = write_op(mutex, timeout_ms, [&](const core::Lease& cur, int64_t now) {
      Decision d;
      d.lease = cur;
      if (!cur.valid_at(now) || !token_matches(cur, token)) return d;
      // Only held (--min-hold): nothing runs under it, it ends now.
      if (cur.holding) {
        end_lease(d, now);
        return d;
      }
      // Revocation: the owner goes, transition_at stays (core/lease.hpp).
      d.write = true;
      d.lease.owner_id.clear();
      d.lease.ttl_at = std::min(cur.ttl_at, now);
      return d;
    });
    // A lease that ended wakes the first waiter, as a release does; a
    // revocation tells its owner and every waiter.
    if (r.changed && r.observed.lease.free_at(r.observed.now)) {
      checkpoint_if_due(wake_first_waiter(mutex));
      return r;
    }
    if (r.changed) notify(mutex);
    checkpoint_if_due();
    return r;
  }

  Reply get(const std::string& mutex, int64_t timeout_ms) override {
    if (std::optional<Reply> r = get_once(mutex, timeout_ms)) return *r;
    if (std::optional<Reply> failed = reopen()) return *failed;
    std::optional<Reply> r = get_once(mutex, timeout_ms);
    if (!r) return Reply::failure(Reply::Status::failed, "the database " + m_path + " was replaced again");
    if (r->ok()) r->error = reopened_note();
    return *r;
  }

  std::optional<Reply> get_once(const std::string& mutex, int64_t timeout_ms) {
    if (!m_db) return std::nullopt;
    set_busy_timeout(timeout_ms);
    read_clocks();
    Row row;
    if (int rc = select_row(mutex, row); rc != SQLITE_OK) return fail_from_rc(rc);
    if (database_replaced()) {
      remember_before_reopen(mutex, lease_of(row, m_clocks));
      return std::nullopt;
    }
    Reply r;
    r.status = Reply::Status::ok;
    r.observed.now = m_clocks.boot + m_boot_to_wall;
    r.observed.lease = on_wall_clock(lease_of(row, m_clocks), m_boot_to_wall);
    return r;
  }

  Listing list(int64_t timeout_ms) override {
    Listing out;
    if (!m_db || database_replaced()) {
      if (std::optional<Reply> failed = reopen()) {
        out.error = failed->error;
        return out;
      }
    }
    set_busy_timeout(timeout_ms);
    sqlite3_stmt* s = stmt(k_list, k_sql_list);
    if (!s) {
      out.error = sqlite3_errmsg(m_db);
      return out;
    }
    read_clocks();
    out.now = m_clocks.boot + m_boot_to_wall;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      MutexLease ml;
      ml.mutex = column_text(s, 0);
      ml.lease = on_wall_clock(lease_of(read_row(s, 1), m_clocks), m_boot_to_wall);
      out.mutexes.push_back(std::move(ml));
    }
    if (rc != SQLITE_DONE) {
      out.error = fail_from_rc(rc).error;
      out.mutexes.clear();
      sqlite3_reset(s);
      return out;
    }
    sqlite3_reset(s);
    out.ok = true;
    return out;
  }

  Wakeups& wakeups(const std::string& mutex, const std::string& contender) override {
    target(mutex, contender);
    return *this;
  }

  // The notify directory holds, per mutex, a broadcast file named by the
  // mutex's hash (touched by a forced release: the owner hears of it) and
  // one file per waiter, "<hash>.w.<enqueue ns>.<pid>": the FIFO of waiters.
  // A release touches only the first live waiter's file. Each contender
  // watches the files, not the directory: a directory watch would wake every
  // waiter for every other waiter's turn and every departure.
  int watch(const std::string& mutex, const std::string& contender, bool waiting) override {
    std::string name = fnv1a_hex(mutex);
    if (m_watch_fd < 0 || name != m_watch_name) {
      leave_queue();
      if (m_watch_fd >= 0) close(m_watch_fd);
      m_waiting = waiting;
      m_watch_name = name;
      m_watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
      if (m_watch_fd < 0) {
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
      m_look = m_waiter_file.empty() || !held_by_other(get(mutex, k_look_timeout_ms), contender);
    } else if (!waiting) {
      leave_queue();
    }
    return m_watch_fd;
  }

  bool look_after_queueing() const override { return m_look; }

  std::string take_warning() override { return std::exchange(m_warning, std::string()); }

  void upkeep() override { checkpoint_if_due(); }

  bool drain_wakeups() override {
    if (m_watch_fd < 0) return false;
    bool ours = false;
    bool lost_watch = false;
    bool lost_place = false;
    alignas(struct inotify_event) char buf[4096];
    for (;;) {
      ssize_t n = read(m_watch_fd, buf, sizeof buf);
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

  std::string describe() const override { return "sqlite://" + m_path; }

private:
  void read_clocks() {
    m_clocks = clocks_now(m_vfs);
    int64_t diff = m_clocks.wall - m_clocks.boot;
    if (!m_boot_to_wall_known || std::abs(diff - m_boot_to_wall) >= k_wall_step_ms) m_boot_to_wall = diff;
    m_boot_to_wall_known = true;
  }

  // Whether the file at the path is another one than the database we have
  // open, or none: `rm -rf $SIMBA_HOME`, or a file moved over it. Our
  // connection would go on with the unlinked file while new processes use
  // a new one. One stat() per operation; the inode of a file we hold open
  // cannot be reused meanwhile.
  bool database_replaced() const {
    struct stat st;
    return stat(m_path.c_str(), &st) != 0 || st.st_dev != m_dev || st.st_ino != m_ino;
  }

  // Opens the path again (creating directory and file, as a new process
  // does), and sets the wake-ups up again there; a failure, when it cannot.
  // Its directory too, which existed when we started: not a typo.
  std::optional<Reply> reopen() {
    close_database();
    drop_notify_directory();
    m_how.create_directories = m_how.create_file;
    try {
      open_database();
    } catch (const Error& e) {
      close_database();
      return Reply::failure(Reply::Status::failed,
                            "the database " + m_path + " was removed or replaced: " + e.what());
    }
    watch_again();
    return std::nullopt;
  }

  std::string reopened_note() const {
    return "the database " + m_path + " was removed or replaced; opened anew";
  }

  // The lease that was valid in the database before it was replaced: a
  // waiter does not take the mutex in the new file before that lease would
  // have ended (its owner's CMD may run until then), nor does anyone else
  // whom this process serves. Only for others' leases: our own is lost.
  void remember_before_reopen(const std::string& mutex, const core::Lease& lease) {
    if (!lease.free_at(m_clocks.boot)) m_before_reopen = MutexLease{mutex, lease};
  }

  bool held_before_reopen(const std::string& mutex, const std::string& contender, int64_t now) {
    if (!m_before_reopen || m_before_reopen->mutex != mutex) return false;
    const core::Lease& l = m_before_reopen->lease;
    if (l.free_at(now)) {
      m_before_reopen.reset();
      return false;
    }
    return l.owner_id != contender;
  }

  void close_database() {
    for (auto& s : m_stmts) {
      sqlite3_finalize(s);
      s = nullptr;
    }
    sqlite3_close_v2(m_db);
    m_db = nullptr;
  }

  enum StmtId { k_begin, k_commit, k_rollback, k_select, k_upsert, k_list, k_stmt_count };

  // Fencing tokens: a new token is max(old + 1, wall_ms * 1000). With
  // synchronous=NORMAL a power loss may roll back the last commits, and with
  // them the last tokens handed out; seeding from the wall clock in
  // microseconds keeps the next token above any token issued before the
  // crash, as long as the wall clock does not go backwards (the same
  // reasoning as the Redis fence). The wall clock, not the boot clock: that
  // one starts again at every boot.
  static uint64_t next_token(uint64_t old, int64_t now) {
    uint64_t from_clock = now > 0 ? static_cast<uint64_t>(now) * 1000 : 0;
    return std::max(old + 1, from_clock);
  }

  // release and force_release: token 0 matches any lease (backend.hpp).
  static bool token_matches(const core::Lease& l, uint64_t token) {
    return token == 0 || l.fencing_token == token;
  }

  // A released lease has no owner and ended now; the token stays.
  static void end_lease(Decision& d, int64_t now) {
    d.write = true;
    d.lease.holding = false;
    d.lease.owner_id.clear();
    d.lease.transition_at = now;
    d.lease.ttl_at = std::min(d.lease.ttl_at, now);
  }

  static std::string column_text(sqlite3_stmt* s, int col) {
    const unsigned char* t = sqlite3_column_text(s, col);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<size_t>(sqlite3_column_bytes(s, col)))
             : std::string();
  }

  static Row read_row(sqlite3_stmt* s, int first) {
    Row row;
    row.exists = true;
    core::Lease& l = row.wall;
    l.owner_id = column_text(s, first);
    l.acquired_at = sqlite3_column_int64(s, first + 1);
    l.ttl_at = sqlite3_column_int64(s, first + 2);
    l.transition_at = sqlite3_column_int64(s, first + 3);
    l.fencing_token = static_cast<uint64_t>(sqlite3_column_int64(s, first + 4));
    row.boot_id = column_text(s, first + 5);
    row.boot_acquired_at = sqlite3_column_int64(s, first + 6);
    row.boot_ttl_at = sqlite3_column_int64(s, first + 7);
    row.boot_transition_at = sqlite3_column_int64(s, first + 8);
    row.boot_stamped = sqlite3_column_type(s, first + 9) != SQLITE_NULL &&
                       static_cast<uint64_t>(sqlite3_column_int64(s, first + 9)) == l.fencing_token;
    // An older simba that took the mutex since leaves the column as it was.
    l.holding = row.boot_stamped && sqlite3_column_int64(s, first + 10) != 0;
    return row;
  }

  // Reads the mutex's row into `row` (exists = false: none).
  int select_row(const std::string& mutex, Row& row) {
    sqlite3_stmt* s = stmt(k_select, k_sql_select);
    if (!s) return sqlite3_errcode(m_db);
    sqlite3_bind_text(s, 1, mutex.data(), static_cast<int>(mutex.size()), SQLITE_TRANSIENT);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) row = read_row(s, 0);
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
  }

  // Writes `l` (on the boot clock) on both clocks, stamped with our boot.
  int write_row(const std::string& mutex, const core::Lease& l) {
    sqlite3_stmt* u = stmt(k_upsert, k_sql_upsert);
    if (!u) return sqlite3_errcode(m_db);
    core::Lease wall = on_wall_clock(l, m_boot_to_wall);
    const std::string& boot = boot_id();
    auto token = static_cast<sqlite3_int64>(l.fencing_token);
    sqlite3_bind_text(u, 1, mutex.data(), static_cast<int>(mutex.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(u, 2, l.owner_id.data(), static_cast<int>(l.owner_id.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(u, 3, wall.acquired_at);
    sqlite3_bind_int64(u, 4, wall.ttl_at);
    sqlite3_bind_int64(u, 5, wall.transition_at);
    sqlite3_bind_int64(u, 6, token);
    sqlite3_bind_text(u, 7, boot.data(), static_cast<int>(boot.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(u, 8, l.acquired_at);
    sqlite3_bind_int64(u, 9, l.ttl_at);
    sqlite3_bind_int64(u, 10, l.transition_at);
    sqlite3_bind_int64(u, 11, token);
    sqlite3_bind_int(u, 12, l.holding ? 1 : 0);
    int rc = sqlite3_step(u);
    sqlite3_reset(u);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
  }

  void exec_or_throw(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(m_db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errmsg(m_db);
      sqlite3_free(err);
      throw UnavailableError("cannot initialize " + m_path + ": " + msg);
    }
  }

  // Prepared statements are kept for the life of the connection.
  sqlite3_stmt* stmt(StmtId id, const char* sql) {
    if (!m_stmts[id])
      sqlite3_prepare_v3(m_db, sql, -1, SQLITE_PREPARE_PERSISTENT, &m_stmts[id], nullptr);
    return m_stmts[id];
  }

  Reply fail_from_rc(int rc) {
    if (is_busy(rc)) return Reply::failure(Reply::Status::failed, "database is busy");
    if ((rc & 0xff) == SQLITE_READONLY) // opened read-only for status: release says why
      if (std::string denied = permission_problem(); !denied.empty())
        return Reply::failure(Reply::Status::failed, denied);
    return Reply::failure(Reply::Status::failed, sqlite3_errmsg(m_db));
  }
  Reply fail_from_db() { return fail_from_rc(sqlite3_errcode(m_db)); }

  // Runs a statement without result rows to completion.
  int run(StmtId id, const char* sql) {
    sqlite3_stmt* s = stmt(id, sql);
    if (!s) return sqlite3_errcode(m_db);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
  }

  void rollback_if_open() {
    if (!sqlite3_get_autocommit(m_db)) run(k_rollback, "ROLLBACK");
  }

  // One operation = one BEGIN IMMEDIATE transaction: read the clocks (inside
  // it: one writer at a time, so their order is the order of the writes)
  // and the lease, let `decide` compute the new lease on the boot clock,
  // write it, commit. When the file at the path is no longer the database
  // we have open (removed or replaced: see database_replaced()), open the
  // path again and run the operation there: an owner's lease is then gone
  // (its guard says so: lost), a waiter contends with the processes that
  // use the new file.
  template <typename Decide> Reply write_op(const std::string& mutex, int64_t timeout_ms, Decide decide) {
    if (std::optional<Reply> r = write_once(mutex, timeout_ms, decide)) return *r;
    if (std::optional<Reply> failed = reopen()) return *failed;
    std::optional<Reply> r = write_once(mutex, timeout_ms, decide);
    if (!r) return Reply::failure(Reply::Status::failed, "the database " + m_path + " was replaced again");
    if (r->ok()) r->error = reopened_note();
    return *r;
  }

  // nullopt: the database was replaced (nothing written; see write_op).
  template <typename Decide>
  std::optional<Reply> write_once(const std::string& mutex, int64_t timeout_ms, Decide decide) {
    if (!m_db) return std::nullopt; // an earlier reopen failed
    set_busy_timeout(timeout_ms);
    int rc = run(k_begin, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK) {
      Reply f = fail_from_rc(rc);
      rollback_if_open();
      return f;
    }
    read_clocks();
    Row row;
    rc = select_row(mutex, row);
    if (rc != SQLITE_OK) {
      Reply f = fail_from_rc(rc);
      rollback_if_open();
      return f;
    }
    if (database_replaced()) {
      rollback_if_open();
      remember_before_reopen(mutex, lease_of(row, m_clocks));
      return std::nullopt;
    }
    core::Lease cur = lease_of(row, m_clocks);

    Decision d = decide(cur, m_clocks.boot);
    Reply r;
    r.observed.now = m_clocks.boot + m_boot_to_wall;
    r.observed.lease = on_wall_clock(d.lease, m_boot_to_wall);

    if (!d.write) {
      // Nothing to write: the read-only transaction just ends.
      rc = run(k_commit, "COMMIT");
      if (rc != SQLITE_OK) rollback_if_open();
      r.status = Reply::Status::ok;
      return r;
    }

    rc = write_row(mutex, d.lease);
    if (rc != SQLITE_OK) {
      Reply f = fail_from_rc(rc);
      rollback_if_open();
      return f;
    }

    rc = run(k_commit, "COMMIT");
    if (rc != SQLITE_OK) {
      // COMMIT may fail with the transaction still open (then rolling back
      // makes it certain nothing was applied) or after writing part of it.
      std::string msg = is_busy(rc) ? "database is busy" : sqlite3_errmsg(m_db);
      if (!sqlite3_get_autocommit(m_db) && run(k_rollback, "ROLLBACK") == SQLITE_OK)
        return Reply::failure(Reply::Status::failed, msg);
      return Reply::failure(Reply::Status::indeterminate, "commit failed: " + msg);
    }
    r.status = Reply::Status::ok;
    r.changed = true;
    return r;
  }

  // ---- The notification directory -------------------------------------------
  // Everything in it is opened from its descriptor, never following a link
  // (O_NOFOLLOW; O_NONBLOCK: a FIFO must not hang us). Files are made with
  // the database's permissions, the directory with the matching search
  // bits, so that whoever may use the database may use them (in a shared
  // directory the group's setgid bit gives them its group).
  mode_t file_mode() const { return m_file_mode; }
  mode_t dir_mode() const { return m_file_mode | ((m_file_mode & 0444) >> 2); }
  // More than the owner's bits: the umask must not take them away (one
  // fchmod per file made; none for a private database).
  bool shared_modes() const { return m_file_mode != 0600; }

  // The notification directory's descriptor (made when missing and
  // `create`), or -1 (m_notify_problem says why, unless it is just missing).
  int notify_directory(bool create) {
    if (m_notify_fd >= 0) return m_notify_fd;
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat(m_dir_fd, m_notify_name.c_str(), flags);
    bool made = false;
    if (fd < 0 && errno == ENOENT && create) {
      made = mkdirat(m_dir_fd, m_notify_name.c_str(), dir_mode()) == 0;
      fd = openat(m_dir_fd, m_notify_name.c_str(), flags);
    }
    if (fd < 0) {
      if (errno != ENOENT || create) m_notify_problem = m_notify_dir + ": " + errno_text(errno);
      return -1;
    }
    if (made && shared_modes()) fchmod(fd, dir_mode() | (m_dir_st.st_mode & S_ISGID));
    if (!m_notify_checked) { // made (by anyone) after the open's check
      struct stat st;
      std::string why = fstat(fd, &st) != 0 ? errno_text(errno) : notify_distrust(st);
      if (!why.empty()) {
        close(fd);
        m_notify_problem = "refusing " + m_notify_dir + ": " + why;
        return -1;
      }
      m_notify_checked = true;
    }
    m_notify_fd = fd;
    m_notify_scanned = false;
    return fd;
  }

  // It was removed: whoever makes it next, it is checked again.
  void drop_notify_directory() {
    if (m_notify_fd >= 0) close(m_notify_fd);
    m_notify_fd = -1;
    m_notify_checked = false;
  }

  // Opens `name` in the notification directory (made when missing); in a
  // new one, once, when the one we had open was removed meanwhile.
  int open_in_notify(const std::string& name, int flags) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      int dir = notify_directory(true);
      if (dir < 0) return -1;
      int fd = openat(dir, name.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, file_mode());
      if (fd >= 0) {
        if ((flags & O_CREAT) && shared_modes()) fchmod(fd, file_mode()); // EPERM: not ours, fine
        return fd;
      }
      if (errno != ENOENT) {
        m_notify_problem = m_notify_dir + "/" + name + ": " + errno_text(errno);
        return -1;
      }
      drop_notify_directory();
    }
    return -1;
  }

  // Watches the file open at `fd` (the very file, not whatever its name
  // leads to by then).
  int watch_fd(int fd, uint32_t mask) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return inotify_add_watch(m_watch_fd, path, mask);
  }

  // A waiter that cannot use the notification waits on its timer alone:
  // it says so once.
  void warn_no_notification() {
    if (m_warned || !m_waiting) return;
    m_warned = true;
    m_warning = "cannot use the release notification (" +
                (m_notify_problem.empty() ? m_notify_dir : m_notify_problem) +
                "): waiting without it, hand-overs will be slow";
  }

  // IN_CLOSE_WRITE on the broadcast file: a forced release. Created when
  // missing (opened read-only, which raises no IN_CLOSE_WRITE).
  bool watch_broadcast() {
    int fd = open_in_notify(m_watch_name, O_CREAT | O_RDONLY);
    if (fd < 0) return false;
    m_broadcast_wd = watch_fd(fd, IN_CLOSE_WRITE);
    close(fd);
    return m_broadcast_wd >= 0;
  }

  // After a reopen: the notify directory may have gone with the database.
  void watch_again() {
    if (m_watch_fd < 0) return;
    leave_queue();
    if (m_broadcast_wd >= 0) inotify_rm_watch(m_watch_fd, m_broadcast_wd);
    m_broadcast_wd = -1;
    watch_broadcast();
    if (m_waiting) join_queue();
  }

  void join_queue() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts); // one host: one clock orders the queue
    char name[96];
    snprintf(name, sizeof name, "%s.w.%020lld.%ld", m_watch_name.c_str(),
             (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, long(getpid()));
    int fd = open_in_notify(name, O_CREAT | O_EXCL | O_RDWR);
    if (fd < 0) { // the timed wake-up remains
      warn_no_notification();
      return;
    }
    // Held while we wait: the kernel drops it the instant we die, which is
    // how a releaser tells a live waiter from a dead one (a pid may be reused).
    flock(fd, LOCK_EX);
    m_waiter_fd = fd;
    m_waiter_file = name;
    // IN_ATTRIB: a releaser touched it (our turn).
    m_waiter_wd = watch_fd(fd, IN_ATTRIB);
  }

  void leave_queue() {
    if (m_waiter_file.empty()) return;
    // The watch first: unlinking raises IN_ATTRIB too.
    if (m_waiter_wd >= 0) inotify_rm_watch(m_watch_fd, m_waiter_wd);
    m_waiter_wd = -1;
    if (m_notify_fd >= 0) unlinkat(m_notify_fd, m_waiter_file.c_str(), 0);
    close(m_waiter_fd);
    m_waiter_fd = -1;
    m_waiter_file.clear();
  }

  // The names in the notification directory that start with `prefix`.
  std::vector<std::string> names_in_notify(int dir, const std::string& prefix) {
    std::vector<std::string> names;
    if (m_notify_scanned) lseek(dir, 0, SEEK_SET);
    m_notify_scanned = true;
    alignas(8) char buf[8192];
    for (;;) {
      ssize_t n = getdents64(dir, buf, sizeof buf);
      if (n <= 0) break;
      for (ssize_t off = 0; off < n;) {
        auto* e = reinterpret_cast<struct dirent64*>(buf + off);
        if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) names.emplace_back(e->d_name);
        off += e->d_reclen;
      }
    }
    return names;
  }

  // Wakes the first waiter of `mutex` that is alive; removes the files of
  // waiters that died (kill -9) on the way. One waiter per release: the
  // others keep sleeping (no thundering herd).
  bool wake_first_waiter(const std::string& mutex) {
    int dir = notify_directory(false);
    if (dir < 0) return false;
    std::vector<std::string> waiters = names_in_notify(dir, fnv1a_hex(mutex) + ".w.");
    std::sort(waiters.begin(), waiters.end()); // by enqueue time
    for (const std::string& w : waiters) {
      long pid = std::strtol(w.c_str() + w.rfind('.') + 1, nullptr, 10);
      if (pid == long(getpid())) continue;
      int fd = openat(dir, w.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
      if (fd < 0) continue; // it just left the queue (or is not a waiter's file)
      bool dead = flock(fd, LOCK_EX | LOCK_NB) == 0; // a live waiter holds it
      if (dead) unlinkat(dir, w.c_str(), 0);
      // IN_ATTRIB: that waiter tries now. The file we opened, not a name.
      bool woke = !dead && futimens(fd, nullptr) == 0;
      close(fd);
      if (woke) return true;
    }
    return false;
  }

  // Closing a file opened for writing raises IN_CLOSE_WRITE for the
  // watchers. Best effort: the waiters' timed wake-up remains.
  void notify(const std::string& mutex) {
    int fd = open_in_notify(fnv1a_hex(mutex), O_CREAT | O_WRONLY);
    if (fd >= 0) close(fd);
  }

  sqlite3* m_db = nullptr;
  std::string m_path;       // absolute, its directory resolved
  std::string m_given_path; // absolute, as given
  SqliteOpen m_how;
  std::string m_base;       // the file's name in its directory
  std::string m_notify_name; // the notification directory's name there
  std::string m_notify_dir; // its path, for messages
  int m_dir_fd = -1;        // the database's directory (O_PATH), checked
  struct stat m_dir_st {};
  bool m_group_shared = false; // the directory is setgid, and writable by its group (ours)
  bool m_public = false;       // everyone may write the directory (sticky)
  bool m_resolved = false;     // m_path resolved (open_directory)
  mode_t m_file_mode = 0600;   // the database's permissions
  int m_notify_fd = -1;        // the notification directory, once opened
  bool m_notify_checked = false; // it was checked (see Trust)
  bool m_notify_scanned = false; // read before: seek back first
  std::string m_notify_problem;  // why it could not be used
  std::string m_warning;         // for take_warning()
  bool m_warned = false;
  sqlite3_stmt* m_stmts[k_stmt_count] = {};
  int m_watch_fd = -1;
  std::string m_watch_name;
  int m_broadcast_wd = -1; // the watch on the broadcast file
  int m_waiter_wd = -1;    // the watch on our own waiter file
  std::string m_waiter_file; // our place in the queue, when waiting
  int m_waiter_fd = -1;      // its flock says we are alive
  int m_wal_pages = 0;       // frames in the WAL after our last commit
  bool m_look = true;        // see look_after_queueing()
  int64_t m_busy_until_ns = 0; // busy_handler gives up then
  sqlite3_vfs* m_vfs = nullptr; // the connection's VFS: its clock is the wall clock
  Clocks m_clocks;              // of the operation in progress
  int64_t m_boot_to_wall = 0;   // wall minus boot clock (k_wall_step_ms)
  bool m_boot_to_wall_known = false;
  dev_t m_dev = 0;              // the database file we have open
  ino_t m_ino = 0;
  std::optional<MutexLease> m_before_reopen; // see remember_before_reopen()
  bool m_waiting = false;       // the last watch() was a waiter's
};

} // namespace

namespace testing {
void shift_sqlite_wall_clock(int64_t ms) {
  g_wall_shift_ms = ms;
  install_shifted_clock();
}
} // namespace testing

std::unique_ptr<Backend> open_sqlite(const std::string& path, const SqliteOpen& how) {
  if (boot_id().empty())
    throw UnavailableError("cannot read /proc/sys/kernel/random/boot_id: SQLite leases are "
                           "timed on the boot clock and need it");
  // Messages name the absolute path (resolved once its directory is open).
  auto backend = std::make_unique<SqliteBackend>(absolute_path(path), how);
  backend->open_database();
  return backend;
}

} // namespace simba::backend
