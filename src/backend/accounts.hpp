#pragma once
// Users and groups by number, from /etc/passwd and /etc/group read here,
// the one place simba reads them. Not getpwuid()/getgrgid(): in a static
// binary those load the host's NSS modules (libnss_sss, libnss_ldap...),
// built for the system's libc, and crashed for a uid without an entry
// (issue 36 §10). A user only a directory service knows (LDAP, sssd) is
// not found here: each caller says its fallback.
#include <sys/types.h>

#include <optional>
#include <string>

namespace simba::backend::accounts {

struct User {
  std::string name;
  std::string home;
};

// `uid`'s line of `passwd_file` ("name:password:uid:gid:gecos:home:shell").
std::optional<User> user(uid_t uid, const char* passwd_file = "/etc/passwd");

// `gid`'s name in `group_file` ("name:password:gid:members"), "" if none.
std::string group_name(gid_t gid, const char* group_file = "/etc/group");

// The name of the user simba runs as (effective uid): its /etc/passwd name,
// else $USER, else "" (a user of LDAP or sssd has no line there).
std::string effective_user_name();

} // namespace simba::backend::accounts
