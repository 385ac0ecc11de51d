// The SQLite backend's trust rules on synthetic stat()s: who may have
// written a directory or the database (issue 13 §5; the e2e tests
// test_sqlite_hostile_files and test_sqlite_shared_users play them with
// real users).
#include "backend/sqlite/trust.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace simba::backend::sqlite_trust;

namespace {

constexpr uid_t k_me = 1000, k_other = 1001;
constexpr gid_t k_mine = 1000, k_shared = 2000, k_foreign = 3000;

// uid 1000, primary group 1000, also in group 2000
Caller me() {
  return Caller{k_me, [](gid_t g) { return g == k_mine || g == k_shared; },
                [](gid_t g) { return g == k_mine; }};
}

struct stat entry(mode_t type_and_mode, uid_t uid, gid_t gid) {
  struct stat st {};
  st.st_mode = type_and_mode;
  st.st_uid = uid;
  st.st_gid = gid;
  return st;
}

std::string dir(mode_t mode, uid_t uid, gid_t gid, bool may_be_public = true,
                const gid_t* shared = nullptr) {
  return directory_distrust(entry(S_IFDIR | mode, uid, gid), may_be_public, shared, me());
}

std::string file(mode_t type_and_mode, uid_t uid, gid_t gid, const gid_t* shared = nullptr) {
  return file_distrust(entry(type_and_mode, uid, gid), shared, me());
}

bool says(const std::string& why, const char* what) { return why.find(what) != std::string::npos; }

} // namespace

TEST_SUITE("backend::sqlite_trust") {
  TEST_CASE("users and groups are named as /etc/passwd and /etc/group name them") {
    CHECK(describe_user(0) == "root, uid 0");
    CHECK(describe_group(0) == "root, gid 0");
    CHECK(describe_user(4294967294u) == "uid 4294967294"); // no one
  }

  TEST_CASE("a directory: ours or root's, not writable by strangers") {
    CHECK(dir(0700, k_me, k_mine).empty());
    CHECK(dir(0755, 0, 0).empty());
    CHECK(says(dir(0700, k_other, k_mine), "belongs to another user ("));
    CHECK(says(dir(0700, k_other, k_mine), "uid 1001)"));
    // Everyone may write: only sticky, and never the notification directory.
    CHECK(says(dir(0777, k_me, k_mine), "not sticky"));
    CHECK(dir(01777, 0, 0).empty()); // /tmp, whose group we are not in
    CHECK(says(dir(01777, 0, 0, false), "every user can write it"));
    CHECK(says(dir(0777, k_me, k_mine, false), "every user can write it"));
  }

  TEST_CASE("a directory its group may write: a group of ours, and setgid or our primary group") {
    CHECK(dir(02770, 0, k_shared).empty());
    CHECK(says(dir(0770, 0, k_shared), "not setgid"));
    CHECK(dir(0775, k_me, k_mine).empty()); // a user private group (umask 002)
    CHECK(says(dir(02770, 0, k_foreign), "gid 3000), which you are not in"));
    // In a shared directory, another member's notification directory.
    gid_t shared = k_shared;
    CHECK(dir(02770, k_other, k_shared, false, &shared).empty());
    CHECK(says(dir(02770, k_other, k_foreign, false, &shared), "another user"));
    CHECK(says(dir(02770, k_other, k_shared, false, nullptr), "another user"));
  }

  TEST_CASE("the database file") {
    CHECK(file(S_IFREG | 0600, k_me, k_mine).empty());
    CHECK(file(S_IFREG | 0644, 0, 0).empty());
    CHECK(says(file(S_IFLNK | 0777, k_me, k_mine), "symbolic link"));
    CHECK(says(file(S_IFIFO | 0600, k_me, k_mine), "not a regular file"));
    CHECK(says(file(S_IFREG | 0666, k_other, k_other), "another user"));
    CHECK(says(file(S_IFREG | 0666, k_me, k_mine), "every user can write it"));
    CHECK(says(file(S_IFREG | 0660, k_me, k_foreign), "which you are not in"));
    CHECK(file(S_IFREG | 0640, k_me, k_foreign).empty()); // they may only read
    gid_t shared = k_shared;
    CHECK(file(S_IFREG | 0660, k_other, k_shared, &shared).empty());
    CHECK(says(file(S_IFREG | 0660, k_other, k_other, &shared), "another user"));
    CHECK(says(file(S_IFREG | 0666, k_other, k_shared, &shared), "every user can write it"));
  }
}
