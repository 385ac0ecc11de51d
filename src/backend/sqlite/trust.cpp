// Whose files the SQLite backend trusts: the rules (trust.hpp).
#include "backend/sqlite/trust.hpp"

#include "backend/accounts.hpp"

#include <unistd.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace simba::backend::sqlite_trust {
namespace {

bool in_group(gid_t gid) {
  if (gid == getegid()) return true;
  int n = getgroups(0, nullptr);
  if (n <= 0) return false;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  n = getgroups(n, groups.data());
  return n > 0 && std::find(groups.begin(), groups.begin() + n, gid) != groups.begin() + n;
}

bool trusted_owner(uid_t uid, const Caller& me) { return uid == me.uid || uid == 0; }

// "name, uid N", or "uid N" when unnamed.
std::string named(const std::string& name, const char* what, unsigned id) {
  return (name.empty() ? "" : name + ", ") + what + " " + std::to_string(id);
}

std::string another_user(uid_t uid) {
  return "it belongs to another user (" + describe_user(uid) + ")";
}

std::string foreign_group(gid_t gid) {
  std::string why = "its group (" + describe_group(gid) + "), which you are not in, can write it";
  // Root is refused too: a member could plant a link where SQLite writes
  // (-wal, -shm), and root's write would land in any file. As a member,
  // root trusts the directory as every member does.
  if (geteuid() == 0)
    why += "; root too, for its writes there could reach any file: run simba as a member, "
           "e.g. sg " + group_name(gid) + " -c 'simba status ...'";
  return why;
}

} // namespace

std::string describe_user(uid_t uid) {
  std::optional<accounts::User> u = accounts::user(uid);
  return named(u ? u->name : "", "uid", uid);
}
std::string describe_group(gid_t gid) { return named(accounts::group_name(gid), "gid", gid); }
std::string group_name(gid_t gid) {
  std::string name = accounts::group_name(gid);
  return name.empty() ? std::to_string(gid) : name;
}

const Caller& this_process() {
  static const Caller me{geteuid(), in_group, [](gid_t gid) { return gid == getegid(); }};
  return me;
}

std::string directory_distrust(const struct stat& st, bool may_be_public, const gid_t* shared_gid,
                               const Caller& me) {
  if (!trusted_owner(st.st_uid, me) && !(shared_gid && st.st_gid == *shared_gid))
    return another_user(st.st_uid);
  if (st.st_mode & S_IWOTH) {
    if (!may_be_public) return "every user can write it";
    if (!(st.st_mode & S_ISVTX))
      return "every user can write it and it is not sticky (chmod o-w, or +t)";
    return {}; // like /tmp: what its group may do, everyone may
  }
  if (st.st_mode & S_IWGRP) {
    if (!me.member(st.st_gid)) return foreign_group(st.st_gid);
    if (!(st.st_mode & S_ISGID) && !me.is_primary(st.st_gid))
      return "its group can write it but it is not setgid (chmod g+s, or g-w)";
  }
  return {};
}

std::string file_distrust(const struct stat& st, const gid_t* shared_gid, const Caller& me) {
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link (name the file itself)";
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  if (!trusted_owner(st.st_uid, me) && !(shared_gid && st.st_gid == *shared_gid))
    return another_user(st.st_uid);
  if (st.st_mode & S_IWOTH) return "every user can write it (chmod o-w)";
  if ((st.st_mode & S_IWGRP) && !me.member(st.st_gid)) return foreign_group(st.st_gid);
  return {};
}

} // namespace simba::backend::sqlite_trust
