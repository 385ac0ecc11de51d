// The open path of the SQLite backend: directory, file, -wal/-shm files
// (database_files.hpp).
#include "backend/sqlite/database_files.hpp"

#include "backend/sqlite/trust.hpp"
#include "core/error.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace simba::backend::sqlite {
namespace {

using sqlite_trust::directory_distrust;
using sqlite_trust::file_distrust;
using sqlite_trust::k_sharing_hint;

uid_t my_uid() { return sqlite_trust::this_process().uid; }

// Filesystem magic numbers (linux/magic.h) of the network filesystems on
// which SQLite's locking is not safe.
constexpr long k_nfs_magic = 0x6969;
constexpr long k_smb_magic = 0x517B;
constexpr long k_cifs_magic = 0xFF534D42;
constexpr long k_smb2_magic = 0xFE534D42;

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

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

} // namespace

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

DatabaseFiles::DatabaseFiles(std::string path, const SqliteOpen& how)
    : m_path(std::move(path)), m_given_path(m_path), m_how(how) {
  m_base = base_name(m_path);
  m_notify_name = m_base + ".notify";
  m_notify_dir = m_path + ".notify";
}

DatabaseFiles::~DatabaseFiles() = default;

// The database's directory, as a descriptor everything beside the database
// is opened from. The path is resolved once (one database, one name:
// describe() serves re-entry detection).
void DatabaseFiles::open_directory() {
  m_dir_fd.reset();
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
  m_dir_fd.reset(fd);
  if (fstat(fd, &m_dir_st) != 0)
    throw UnavailableError("cannot open the directory " + dir + ": " + errno_text(errno));
  if (std::string why = directory_distrust(m_dir_st, true, nullptr); !why.empty())
    throw UnavailableError("refusing the database directory " + dir + ": " + why + k_sharing_hint);
  // Its group's writing was accepted above only for one of our groups.
  m_group_shared = (m_dir_st.st_mode & S_IWGRP) && (m_dir_st.st_mode & S_ISGID);
  m_public = (m_dir_st.st_mode & S_IWOTH) != 0; // and sticky
  if (!m_resolved) resolve_path(dir);
  refuse_network_filesystem();
}

void DatabaseFiles::resolve_path(const std::string& dir) {
  m_resolved = true;
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", m_dir_fd.get());
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

void DatabaseFiles::refuse_network_filesystem() const {
  if (const char* fs = network_fs_name(m_dir_fd.get()))
    throw UnavailableError("refusing the database " + m_path + " on a network filesystem (" + fs +
                           "): SQLite locking is not safe there; use a local path or Redis");
}

void DatabaseFiles::open_file() {
  struct stat file = database_file();
  m_dev = file.st_dev;
  m_ino = file.st_ino;
  m_file_mode = file.st_mode & 0666;
  if (m_public) claim_wal_files(file);
}

// The database file, checked; created when missing and allowed.
struct stat DatabaseFiles::database_file() {
  struct stat st;
  if (fstatat(m_dir_fd.get(), m_base.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) throw UnavailableError("cannot open " + m_path + ": " + errno_text(errno));
    if (!m_how.create_file) throw UnavailableError("no simba database at " + m_path);
    create_database_file();
    if (fstatat(m_dir_fd.get(), m_base.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      throw UnavailableError("cannot open " + m_path + ": " + errno_text(errno));
  }
  if (S_ISDIR(st.st_mode))
    throw UnavailableError("cannot open " + m_path + ": " + errno_text(EISDIR));
  if (std::string why = file_distrust(st, shared_gid()); !why.empty())
    throw UnavailableError("refusing the database " + m_path + ": " + why + k_sharing_hint);
  return st;
}

// 0600; 0660 in a shared directory (setgid, writable by its group), for the
// group's other members.
void DatabaseFiles::create_database_file() {
  check_links_on_the_way();
  mode_t mode = m_group_shared ? 0660 : 0600;
  sys::Fd fd(openat(m_dir_fd.get(), m_base.c_str(),
                   O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode));
  if (!fd) {
    if (errno == EEXIST) return; // another process was quicker (checked by the caller)
    throw UnavailableError("cannot create " + m_path + ": " + errno_text(errno));
  }
  if (m_group_shared) fchmod(fd.get(), mode); // the umask may have taken the group's bits
}

// A database is made only where the path leads through links we trust:
// another user's symlink on the way (planted in /tmp, say) could make root
// create its files in any directory root may write. Checked when the file is
// made (not on the hot path); links inside a link's target are not followed
// here.
void DatabaseFiles::check_links_on_the_way() const {
  const std::string dir = dir_name(m_given_path);
  for (size_t pos = 1; pos <= dir.size();) {
    size_t next = dir.find('/', pos);
    if (next == std::string::npos) next = dir.size();
    std::string prefix = dir.substr(0, next);
    pos = next + 1;
    struct stat st;
    if (lstat(prefix.c_str(), &st) == 0 && S_ISLNK(st.st_mode) && st.st_uid != my_uid() &&
        st.st_uid != 0)
      throw UnavailableError("refusing to create " + m_given_path + ": the path goes through " +
                             prefix + ", a symbolic link of another user (" +
                             sqlite_trust::describe_user(st.st_uid) + ")" + k_sharing_hint);
  }
}

// In a directory everyone may write (sticky, like /tmp) another user could
// make the -wal or -shm file before SQLite does; SQLite opens them without
// following a link, but would use a file someone else made. So they must be
// ours or the database owner's, and are made here (before anyone else can)
// when missing.
void DatabaseFiles::claim_wal_files(const struct stat& db) {
  for (const char* suffix : {"-wal", "-shm"}) {
    std::string name = m_base + suffix;
    if (m_how.create_file) {
      if (sys::Fd(openat(m_dir_fd.get(), name.c_str(),
                         O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, m_file_mode)))
        continue; // made (and closed): ours
    }
    struct stat st;
    if (fstatat(m_dir_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue; // SQLite's turn
    if (!S_ISREG(st.st_mode) || (st.st_uid != db.st_uid && st.st_uid != my_uid()) ||
        (st.st_mode & S_IWOTH))
      throw UnavailableError("refusing the database " + m_path + ": its " + suffix +
                             " file was made by another user (" + sqlite_trust::describe_user(st.st_uid) +
                             ") in a directory everyone can write" + k_sharing_hint);
  }
}

// `rm -rf $SIMBA_HOME`, or a file moved over it: our connection would go on
// with the unlinked file while new processes use a new one. One stat() per
// operation; the inode of a file we hold open cannot be reused meanwhile.
bool DatabaseFiles::replaced() const {
  struct stat st;
  return stat(m_path.c_str(), &st) != 0 || st.st_dev != m_dev || st.st_ino != m_ino;
}

std::string DatabaseFiles::permission_problem() const {
  bool missing = false;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::string name = m_base + suffix;
    if (faccessat(m_dir_fd.get(), name.c_str(), R_OK | W_OK, AT_EACCESS) == 0) continue;
    if (errno == ENOENT) {
      missing = true;
      continue;
    }
    int err = errno;
    if (err == EACCES && faccessat(m_dir_fd.get(), name.c_str(), R_OK, AT_EACCESS) == 0)
      return "cannot open " + m_path + suffix + " for writing: " + errno_text(err);
    return "cannot open " + m_path + suffix + ": " + errno_text(err);
  }
  if (missing && faccessat(m_dir_fd.get(), ".", W_OK, AT_EACCESS) != 0)
    return "cannot create the -wal and -shm files of " + m_path + " in " + dir_name(m_path) + ": " +
           errno_text(errno);
  return {};
}

bool DatabaseFiles::wal_has_frames() const {
  struct stat st;
  return fstatat(m_dir_fd.get(), (m_base + "-wal").c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         st.st_size > 0;
}

std::string DatabaseFiles::notify_distrust(const struct stat& st) const {
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link";
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  return directory_distrust(st, false, shared_gid());
}

} // namespace simba::backend::sqlite
