#pragma once
// simba doctor on SQLite: the judgements of its checks on facts already
// read (file system type, modes, inotify counts), pure so that tests can
// give them a file system they cannot mount. sqlite_doctor.cpp reads the
// facts (SqliteBackend::diagnose).
#include "backend/diagnosis.hpp"

#include <sys/types.h>

#include <optional>
#include <string>

namespace simba::backend::sqlite_doctor {

// "filesystem": `fstype` as /proc/self/mountinfo names it (ext4, nfs4,
// fuse.sshfs, ...). SQLite's locks (fcntl) and the WAL's shared memory
// (mmap of -shm) work only where one kernel sees every user of the file:
// fail on network and cluster file systems, warn on FUSE and on shares of
// a hypervisor (9p, virtiofs), where they depend on the file system; ok
// otherwise.
Finding judge_filesystem(const std::string& fstype, const std::string& dir);

// The name of a statfs() f_type where mountinfo gave none ("" if unknown).
std::string filesystem_name(long magic);

// One file's owner, group and mode (a stat's), and its path.
struct FileFacts {
  std::string path;
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t mode = 0; // st_mode
};

// What "permissions" judges: the database's directory, the file, its -wal
// and -shm and the notification directory where they exist, names for the
// ids, and what this process may do (permission_problem: the open path's
// line for a file we may not write, empty when we may).
struct PermissionFacts {
  FileFacts dir;
  FileFacts file;
  std::optional<FileFacts> wal, shm, notify;
  std::string (*group_name)(gid_t) = nullptr; // the name, or the number
  std::string permission_problem;
};

// "permissions": warn where open accepts what works badly: a directory
// everyone may write (like /tmp); in a shared directory (setgid, writable
// by its group) a database file, -wal, -shm or notification directory its
// group's other members cannot write; a database we may only read. Each
// with the chmod/chgrp that fixes it. ok: who may write it.
Finding judge_permissions(const PermissionFacts& f);

// "inotify": waiters and owners on SQLite each use one inotify instance
// for their wake-ups; without one they fall back to their timers. warn
// when fewer than 16 of the user's `max` are left (`used` of them: about,
// an instance shared by a fork counts twice).
Finding judge_inotify(long max, long used);

} // namespace simba::backend::sqlite_doctor
