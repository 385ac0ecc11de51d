#pragma once
// Whose files the SQLite backend trusts (docs/backends/sqlite.md, "Sharing a database between
// users"). Whoever can write the database, its directory or the notification
// directory can forge leases, and can plant files where simba creates or
// touches one (a symlink to /etc/nologin). So simba uses only what no
// untrusted user can write:
// * a directory: owned by us or root; writable by its group only when we
//   are in that group and the directory is setgid (a shared directory:
//   everything made in it gets its group) or the group is our own primary
//   group; writable by everyone only with the sticky bit (like /tmp: nobody
//   removes or renames another user's files), and never the notification
//   directory. In a shared directory the notification directory may belong
//   to any member who made it, if it has the directory's group.
// * the database file: a regular file, not a symlink; owned by us or root,
//   or of the shared directory's group; writable by its group only when we
//   are in it; never writable by everyone.
// Pure rules on a stat(): the backend opens and stats, these judge.
#include <sys/stat.h>
#include <sys/types.h>

#include <functional>
#include <string>

namespace simba::backend::sqlite_trust {

struct Caller {
  uid_t uid = 0;
  std::function<bool(gid_t)> member;     // we are in the group
  std::function<bool(gid_t)> is_primary; // it is our effective group
};

// "name, uid N" / "name, gid N" for messages ("uid N" when unnamed).
std::string describe_user(uid_t uid);
std::string describe_group(gid_t gid);
// The group's name alone, for a command to type (chgrp NAME); its number
// when it has none.
std::string group_name(gid_t gid);

// This process (effective ids; the groups read only when a rule asks).
const Caller& this_process();

// Why a directory may have been written by someone we do not trust; empty
// when it is fine. `may_be_public`: world-writable with the sticky bit is
// fine (the database's directory, like /tmp). `shared_gid`: the group of the
// shared directory it lies in (the notification directory), whose members
// may own it.
std::string directory_distrust(const struct stat& st, bool may_be_public, const gid_t* shared_gid,
                               const Caller& me = this_process());

// The same for the database file.
std::string file_distrust(const struct stat& st, const gid_t* shared_gid,
                          const Caller& me = this_process());

// Appended to a refusal: where the rules and the recipe are.
constexpr const char* k_sharing_hint = " (see \"Sharing a database between users\" in simba(1))";

} // namespace simba::backend::sqlite_trust
