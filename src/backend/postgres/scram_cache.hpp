#pragma once
// The per-user cache of SCRAM keys (issue 33 §2): PBKDF2 is most of what
// a SCRAM login costs, and its result depends only on the password, the
// salt and the iteration count, so the ClientKey and ServerKey it gives are
// kept, keyed by server, port, user, salt and iteration count. A changed
// password changes the salt the server sends (PostgreSQL draws a new one),
// so a stale entry is a miss, never a wrong login.
//
// The file: ${XDG_CACHE_HOME:-~/.cache}/simba/scram-keys, mode 0600 in a
// directory 0700, one line per server and user:
//   <id> <key> <ClientKey> <ServerKey>
// <id>: the first 16 hex digits of SHA-256(host NUL port NUL user), to
// replace a server's old line; <key>: SHA-256(host NUL port NUL user NUL
// salt NUL iterations) in hex; the keys in base64. No host, user or
// password in clear. What it is worth to a thief, and why that is no more
// than ~/.pgpass: docs/backends/postgres.md, "The SCRAM key cache".
//
// Opened as the SQLite backend opens a file it must not trust blindly: no
// symbolic link followed (O_NOFOLLOW), and used only when it is a regular
// file of the effective user that no group or other user can read or write,
// in a directory of that user that no one else can write. Anything else,
// and any error, is a miss (load) or nothing written (store): the cache
// only ever saves time, it never fails a login.
#include "backend/postgres/scram.hpp"

#include <optional>
#include <string>

namespace simba::backend::pg::scram_cache {

struct CacheKey {
  std::string host; // as connected to (a name, an address or a socket directory)
  int port = 0;
  std::string user;
  std::string salt; // decoded (scram::Client::salt())
  int iterations = 0;
};

// The keys for `key`, when the cache has them. Not a check of the password
// by itself: the connection (connection_auth.cpp) puts a salted SHA-256 of
// the password it was given in `user`, so that keys cached for one
// password never log in with another (a mistyped or outdated local one is
// refused as without the cache); docs/backends/postgres.md says what that
// digest costs a thief's guesses.
std::optional<scram::Keys> load(const CacheKey& key);
// Replaces the server's and user's line (another salt or count there is
// stale), written atomically (a temporary file renamed over the old one).
// For the caller: after a miss, once the server said AuthenticationOk (so
// that a wrong password's keys are never kept).
void store(const CacheKey& key, const scram::Keys& keys);

// The cache's directory: $XDG_CACHE_HOME/simba (when absolute, as the XDG
// spec asks), else $HOME/.cache/simba; empty when neither is known.
std::string directory();

} // namespace simba::backend::pg::scram_cache
