// simba doctor on SQLite: the judgements (doctor_checks.hpp).
#include "backend/sqlite/doctor_checks.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <vector>

namespace simba::backend::sqlite_doctor {
namespace {

using Verdict = Finding::Verdict;

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (s == n) return true;
  return false;
}

// File systems whose files other hosts use too: one kernel does not see
// every lock. FUSE ones by their subtype ("fuse.sshfs").
bool networked(const std::string& t) {
  return one_of(t, {"nfs", "nfs4", "cifs", "smb3", "smbfs", "smb2", "ncpfs", "ceph", "afs",
                    "lustre", "gpfs", "beegfs", "glusterfs", "ocfs2", "gfs2", "davfs", "coda",
                    "fuse.sshfs", "fuse.s3fs", "fuse.glusterfs", "fuse.ceph-fuse", "fuse.rclone",
                    "fuse.gcsfuse", "fuse.juicefs", "fuse.davfs2", "fuse.cephfs"});
}

std::string octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string joined(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// In a shared directory: the files of the group's other members.
void judge_shared(const PermissionFacts& f, std::vector<std::string>& problems,
                  std::vector<std::string>& fixes) {
  const std::string group = f.group_name(f.dir.gid);
  std::vector<std::string> bad, paths;
  for (const auto* file : {&f.file, f.wal ? &*f.wal : nullptr, f.shm ? &*f.shm : nullptr}) {
    if (!file) continue;
    if (file->gid == f.dir.gid && (file->mode & S_IRGRP) && (file->mode & S_IWGRP)) continue;
    bad.push_back(file->path + " (group " + f.group_name(file->gid) + ", mode " +
                  octal(file->mode) + ")");
    paths.push_back(file->path);
  }
  if (!bad.empty()) {
    problems.push_back("the directory is shared with group " + group +
                       " but its other members cannot write " + joined(bad, ", "));
    fixes.push_back("chgrp " + group + " " + joined(paths, " ") + "; chmod g+rw " +
                    joined(paths, " "));
  }
  if (f.notify && (f.notify->gid != f.dir.gid || (f.notify->mode & 070) != 070)) {
    problems.push_back(f.notify->path + " (group " + f.group_name(f.notify->gid) + ", mode " +
                       octal(f.notify->mode) + ") is not the group's: its other members " +
                       "cannot queue or be woken");
    fixes.push_back("rm -r " + f.notify->path + " (made anew, the group's)");
  }
}

} // namespace

Finding judge_filesystem(const std::string& fstype, const std::string& dir) {
  Finding f;
  f.check = "filesystem";
  const std::string& t = fstype;
  std::string where = dir + " is on " + (t.empty() ? "a file system of unknown type" : t);
  if (networked(t)) {
    f.verdict = Verdict::fail;
    f.detail = where + ", shared by several hosts: SQLite's locks (fcntl) and the WAL's shared "
                       "memory do not hold across them";
    f.fix = "put the database on a local file system, or share leases between hosts with Redis "
            "or PostgreSQL";
  } else if (t == "fuse" || t == "fuseblk" || t.rfind("fuse.", 0) == 0 ||
             one_of(t, {"9p", "virtiofs", "vboxsf", "vmhgfs", "prl_fs"})) {
    f.verdict = Verdict::warn;
    f.detail = where + " (FUSE, or a share of the host's): whether SQLite's locks (fcntl) and the "
                       "WAL's shared memory work depends on that file system, and they hold "
                       "only among this kernel's processes";
    f.fix = "put the database on a local file system (ext4, xfs, btrfs, tmpfs)";
  } else {
    f.detail = where + (t.empty() ? ", taken as local" : " (local)");
  }
  return f;
}

std::string filesystem_name(long magic) {
  switch (magic) {
  case 0x6969: return "nfs";
  case 0x517B: return "smbfs";
  case 0xFF534D42: return "cifs";
  case 0xFE534D42: return "smb2";
  case 0x65735546: return "fuse";
  case 0x01021997: return "9p";
  case 0x00C36400: return "ceph";
  case 0x5346414F: return "afs";
  case 0xEF53: return "ext4";
  case 0x58465342: return "xfs";
  case 0x9123683E: return "btrfs";
  case 0x01021994: return "tmpfs";
  case 0x794C7630: return "overlay";
  default: return "";
  }
}

Finding judge_permissions(const PermissionFacts& f) {
  Finding out;
  out.check = "permissions";
  std::vector<std::string> problems, fixes;
  bool shared = (f.dir.mode & S_ISGID) && (f.dir.mode & S_IWGRP);
  if (f.dir.mode & S_IWOTH) {
    problems.push_back("every user may write " + f.dir.path + " (mode " + octal(f.dir.mode) +
                       ", like /tmp): another user can take the names of the database's files "
                       "first, and simba then refuses it");
    fixes.push_back("move the database to a directory of its own: install -d -m 700 DIR (or -m "
                    "2770 -g GROUP to share it with a group)");
  } else if (shared) {
    judge_shared(f, problems, fixes);
  }
  if (!f.permission_problem.empty()) {
    problems.push_back(f.permission_problem + ": status works, run, lead and schedule do not");
    if (fixes.empty())
      fixes.push_back("run as the database's owner, or share it with a group (docs/backends/"
                      "sqlite.md, \"Sharing a database between users\")");
  }
  if (!problems.empty()) {
    out.verdict = Verdict::warn;
    out.detail = joined(problems, "; ");
    out.fix = joined(fixes, "; ");
  } else if (shared) {
    out.detail = f.dir.path + " is shared with group " + f.group_name(f.dir.gid) + " (mode " +
                 octal(f.dir.mode) + "), and so are the database's files";
  } else {
    bool group_writes = ((f.dir.mode | f.file.mode) & S_IWGRP) != 0;
    out.detail = f.dir.path + " (mode " + octal(f.dir.mode) + ") and " + f.file.path + " (mode " +
                 octal(f.file.mode) + "): " +
                 (group_writes ? "their owner and group " + f.group_name(f.file.gid) + " may write them"
                               : "only their owner may write them");
  }
  return out;
}

Finding judge_inotify(long max, long used) {
  Finding f;
  f.check = "inotify";
  long left = max - used;
  f.detail = "about " + std::to_string(used) + " of this user's " + std::to_string(max) +
             " inotify instances in use (fs.inotify.max_user_instances); each simba waiting or "
             "holding on SQLite uses one for its wake-ups";
  if (left < 16) {
    f.verdict = Verdict::warn;
    f.detail += ": " + std::to_string(left < 0 ? 0 : left) +
                " left; without one a waiter wakes only on its timer, up to the lease's end";
    f.fix = "sysctl fs.inotify.max_user_instances=" + std::to_string(max < 512 ? 1024 : max * 2) +
            " (and the same in /etc/sysctl.d/ to keep it)";
  }
  return f;
}

} // namespace simba::backend::sqlite_doctor
