// simba doctor's SQLite judgements on facts a test cannot make for real:
// file systems it cannot mount (NFS, SMB, FUSE), inotify counts near the
// limit (issue 32 §2). tests/e2e/test_doctor_sqlite.sh plays the modes.
#include "backend/sqlite/doctor_checks.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <string>

using namespace simba::backend;
using namespace simba::backend::sqlite_doctor;
using Verdict = Finding::Verdict;

TEST_CASE("doctor: network and cluster file systems fail, with why and the fix") {
  for (const char* t : {"nfs", "nfs4", "cifs", "smb3", "ceph", "glusterfs", "fuse.sshfs"}) {
    CAPTURE(t);
    Finding f = judge_filesystem(t, "/srv/locks");
    CHECK(f.check == "filesystem");
    CHECK(f.verdict == Verdict::fail);
    CHECK(f.detail.find(std::string("/srv/locks is on ") + t) == 0);
    CHECK(f.detail.find("fcntl") != std::string::npos);
    CHECK(f.fix.find("local file system") != std::string::npos);
  }
}

TEST_CASE("doctor: FUSE and hypervisor shares warn") {
  for (const char* t : {"fuse", "fuseblk", "fuse.mergerfs", "9p", "virtiofs"}) {
    CAPTURE(t);
    Finding f = judge_filesystem(t, "/mnt/x");
    CHECK(f.verdict == Verdict::warn);
    CHECK(!f.fix.empty());
  }
}

TEST_CASE("doctor: local file systems are ok, an unknown one too") {
  for (const char* t : {"ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", ""}) {
    CAPTURE(t);
    Finding f = judge_filesystem(t, "/var/lib/simba");
    CHECK(f.verdict == Verdict::ok);
    CHECK(f.fix.empty());
  }
}

TEST_CASE("doctor: statfs magic numbers name the file system when mountinfo does not") {
  CHECK(filesystem_name(0x6969) == "nfs");
  CHECK(filesystem_name(0xFF534D42) == "cifs");
  CHECK(filesystem_name(0x65735546) == "fuse");
  CHECK(filesystem_name(0xEF53) == "ext4");
  CHECK(filesystem_name(0x12345) == "");
  CHECK(judge_filesystem(filesystem_name(0x6969), "/d").verdict == Verdict::fail);
}

TEST_CASE("doctor: inotify instances, warn when few are left") {
  CHECK(judge_inotify(128, 3).verdict == Verdict::ok);
  Finding f = judge_inotify(128, 120);
  CHECK(f.verdict == Verdict::warn);
  CHECK(f.detail.find("120 of this user's 128") != std::string::npos);
  CHECK(f.detail.find("8 left") != std::string::npos);
  CHECK(f.fix.find("sysctl fs.inotify.max_user_instances=1024") == 0);
  CHECK(judge_inotify(128, 130).detail.find("0 left") != std::string::npos);
}

namespace {

std::string group(gid_t g) { return g == 2000 ? "ci-locks" : std::to_string(g); }

PermissionFacts shared_dir() {
  PermissionFacts f;
  f.dir = FileFacts{"/var/lib/ci-locks", 0, 2000, S_IFDIR | 02770};
  f.file = FileFacts{"/var/lib/ci-locks/simba.db", 1000, 2000, S_IFREG | 0660};
  f.group_name = group;
  return f;
}

} // namespace

TEST_CASE("doctor: a shared directory whose files its group can write is ok") {
  Finding f = judge_permissions(shared_dir());
  CHECK(f.verdict == Verdict::ok);
  CHECK(f.detail.find("shared with group ci-locks") != std::string::npos);
}

TEST_CASE("doctor: a shared database its group cannot write warns, with chgrp and chmod by name") {
  PermissionFacts f = shared_dir();
  f.file.mode = S_IFREG | 0600;
  f.wal = FileFacts{"/var/lib/ci-locks/simba.db-wal", 1000, 1000, S_IFREG | 0660};
  Finding r = judge_permissions(f);
  CHECK(r.verdict == Verdict::warn);
  CHECK(r.detail.find("simba.db (group ci-locks, mode 0600)") != std::string::npos);
  CHECK(r.detail.find("simba.db-wal (group 1000, mode 0660)") != std::string::npos);
  CHECK(r.fix == "chgrp ci-locks /var/lib/ci-locks/simba.db /var/lib/ci-locks/simba.db-wal; "
                 "chmod g+rw /var/lib/ci-locks/simba.db /var/lib/ci-locks/simba.db-wal");
}

TEST_CASE("doctor: a notification directory not the group's warns: remove it, it is made anew") {
  PermissionFacts f = shared_dir();
  f.notify = FileFacts{"/var/lib/ci-locks/simba.db.notify", 1000, 2000, S_IFDIR | 0700};
  Finding r = judge_permissions(f);
  CHECK(r.verdict == Verdict::warn);
  CHECK(r.fix.find("rm -r /var/lib/ci-locks/simba.db.notify") == 0);
}

TEST_CASE("doctor: a directory everyone may write warns; one of the user's own is ok") {
  PermissionFacts f = shared_dir();
  f.dir.mode = S_IFDIR | 01777;
  CHECK(judge_permissions(f).verdict == Verdict::warn);
  CHECK(judge_permissions(f).fix.find("install -d -m 700") != std::string::npos);
  f.dir.mode = S_IFDIR | 0700;
  f.file.mode = S_IFREG | 0600;
  CHECK(judge_permissions(f).verdict == Verdict::ok);
}

TEST_CASE("doctor: a database the user may only read warns: status only") {
  PermissionFacts f = shared_dir();
  f.dir.mode = S_IFDIR | 0755;
  f.permission_problem = "cannot open /var/lib/ci-locks/simba.db for writing: permission denied";
  Finding r = judge_permissions(f);
  CHECK(r.verdict == Verdict::warn);
  CHECK(r.detail.find("status works, run, lead and schedule do not") != std::string::npos);
}
