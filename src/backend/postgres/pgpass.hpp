#pragma once
// The password file (~/.pgpass, PGPASSFILE, ?passfile=), read as libpq
// reads it: lines "host:port:database:user:password", '*' matching
// anything, '\' escaping ':' and '\'; the first matching line wins. A
// file that its group or others may read is ignored, as libpq ignores it.
#include <string>

namespace simba::backend::pg {

struct PassfileLookup {
  std::string password;          // "" when no line matched
  bool ignored_for_mode = false; // the file exists but group/world may read it
};

// `host` as the connection names it (a Unix socket directory too: the
// default one matches "localhost").
PassfileLookup passfile_password(const std::string& path, const std::string& host, int port,
                                 const std::string& dbname, const std::string& user);

} // namespace simba::backend::pg
