// simba doctor on SQLite (SqliteBackend::diagnose): the facts its checks
// judge (doctor_checks.hpp), read from the open database's directory,
// /proc/self/mountinfo and /proc.
#include "backend/sqlite/backend_class.hpp"
#include "backend/sqlite/doctor_checks.hpp"
#include "backend/sqlite/trust.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace simba::backend::sqlite {
namespace {

namespace doctor = sqlite_doctor;

// The type of the file system `dir_fd` is on, as mountinfo names it (the
// last mount of its device: the one on top), else by its statfs magic.
// Test hook: SIMBA_TEST_FSTYPE names it instead (database_files.cpp has
// the open's side of it: nfs and smb are refused before this runs).
std::string filesystem_type(int dir_fd) {
  if (const char* fake = std::getenv("SIMBA_TEST_FSTYPE"); fake && *fake) return fake;
  struct stat st;
  std::string found;
  if (fstat(dir_fd, &st) == 0) {
    const std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
    if (std::FILE* f = std::fopen("/proc/self/mountinfo", "re")) {
      char line[4096];
      while (std::fgets(line, sizeof line, f)) {
        // "36 35 98:0 /root /mnt rw,noatime shared:1 - ext4 /dev/sda1 rw"
        std::string l(line);
        size_t a = l.find(' '), b = a == std::string::npos ? a : l.find(' ', a + 1);
        size_t c = b == std::string::npos ? b : l.find(' ', b + 1);
        size_t dash = l.find(" - ");
        if (c == std::string::npos || dash == std::string::npos) continue;
        if (l.compare(b + 1, c - b - 1, dev) != 0) continue;
        size_t end = l.find(' ', dash + 3);
        found = l.substr(dash + 3, end == std::string::npos ? end : end - dash - 3);
      }
      std::fclose(f);
    }
  }
  struct statfs sf;
  if (found.empty() && fstatfs(dir_fd, &sf) == 0)
    found = doctor::filesystem_name(static_cast<long>(static_cast<unsigned int>(sf.f_type)));
  return found;
}

// A file's facts, read without following a link; nullopt when missing.
std::optional<doctor::FileFacts> facts_at(int dir_fd, const std::string& name,
                                          const std::string& path) {
  struct stat st;
  if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
  return doctor::FileFacts{path, st.st_uid, st.st_gid, st.st_mode};
}

doctor::PermissionFacts permission_facts(const DatabaseFiles& files) {
  doctor::PermissionFacts f;
  const std::string& path = files.path();
  std::string base = path.substr(path.rfind('/') + 1);
  struct stat st;
  if (fstat(files.dir_fd(), &st) == 0)
    f.dir = doctor::FileFacts{dir_name(path), st.st_uid, st.st_gid, st.st_mode};
  if (auto file = facts_at(files.dir_fd(), base, path)) f.file = *file;
  f.wal = facts_at(files.dir_fd(), base + "-wal", path + "-wal");
  f.shm = facts_at(files.dir_fd(), base + "-shm", path + "-shm");
  f.notify = facts_at(files.dir_fd(), files.notify_name(), files.notify_dir());
  f.group_name = sqlite_trust::group_name;
  f.permission_problem = files.permission_problem();
  return f;
}

// The inotify instances of the processes of `uid` (their descriptors
// that are one), counted in /proc: others' are not readable, nor needed.
long inotify_instances_of(uid_t uid) {
  long count = 0;
  DIR* proc = opendir("/proc");
  if (!proc) return 0;
  while (struct dirent* p = readdir(proc)) {
    if (p->d_name[0] < '1' || p->d_name[0] > '9') continue;
    struct stat st;
    std::string fd_dir = std::string("/proc/") + p->d_name + "/fd";
    if (stat((std::string("/proc/") + p->d_name).c_str(), &st) != 0 || st.st_uid != uid) continue;
    DIR* fds = opendir(fd_dir.c_str());
    if (!fds) continue;
    while (struct dirent* e = readdir(fds)) {
      char target[64];
      ssize_t n = readlinkat(dirfd(fds), e->d_name, target, sizeof target - 1);
      if (n > 0 && std::string(target, static_cast<size_t>(n)) == "anon_inode:inotify") ++count;
    }
    closedir(fds);
  }
  closedir(proc);
  return count;
}

long max_user_instances() {
  long max = -1;
  if (std::FILE* f = std::fopen("/proc/sys/fs/inotify/max_user_instances", "re")) {
    if (std::fscanf(f, "%ld", &max) != 1) max = -1;
    std::fclose(f);
  }
  return max;
}

} // namespace

void SqliteBackend::diagnose(Diagnosis& found, const DiagnoseOptions&) {
  found.push_back(
      doctor::judge_filesystem(filesystem_type(m_files.dir_fd()), dir_name(m_files.path())));
  found.push_back(doctor::judge_permissions(permission_facts(m_files)));
  if (long max = max_user_instances(); max > 0) {
    found.push_back(doctor::judge_inotify(max, inotify_instances_of(geteuid())));
  } else {
    found.push_back(Finding{"inotify", Finding::Verdict::ok,
                            "cannot read fs.inotify.max_user_instances: not checked", ""});
  }
}

} // namespace simba::backend::sqlite
