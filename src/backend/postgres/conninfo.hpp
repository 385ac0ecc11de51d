#pragma once
// What to connect to and how, read as libpq reads it: the URI
// (postgres://[user[:password]@][host[:port][,host[:port]...]][/dbname]
// [?keyword=value&...], with libpq's keywords), then libpq's environment
// (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGPASSFILE, PGDATABASE, PGSSLMODE,
// PGSSLROOTCERT, PGAPPNAME, PGCONNECT_TIMEOUT, PGOPTIONS, ...) for what the
// URI leaves out, then libpq's defaults. The password file is read later,
// per host (pgpass.hpp). Users' URIs and environments keep working as they
// did when simba loaded libpq.
#include <map>
#include <string>
#include <vector>

namespace simba::backend::pg {

// One server to try: a TCP host (a name or an address; `address`, from
// hostaddr, is what is dialled when set) or a Unix socket directory.
struct Endpoint {
  std::string host; // as named (the certificate's name, ~/.pgpass's host)
  std::string address;
  int port = 5432;
  bool unix_socket() const { return !host.empty() && host[0] == '/'; }
  std::string socket_path() const { return host + "/.s.PGSQL." + std::to_string(port); }
  std::string shown() const;
};

struct ConnInfo {
  std::vector<Endpoint> endpoints;
  std::string user, password, dbname, options, application_name, client_encoding;
  std::string passfile;
  std::string sslmode = "prefer", sslrootcert, sslcert, sslkey;
  std::string target_session_attrs = "any";
  int connect_timeout_s = 0; // 0: none but the call's deadline
  bool keepalives = true;
  int keepalives_idle = 0, keepalives_interval = 0, keepalives_count = 0; // 0: the system's
  int tcp_user_timeout_ms = 0;
  bool scram_cache = true;
};

// `uri` with `defaults` (keyword -> value) under it: the URI's own
// keywords win over the defaults, the defaults over the environment. ""
// or why the URI cannot be used (never holding the password).
std::string parse_conninfo(const std::string& uri,
                           const std::map<std::string, std::string>& defaults, ConnInfo& out);

// The comma-separated parts of `s`, as libpq splits host, hostaddr and
// port lists ("" is one empty part).
std::vector<std::string> split_commas(const std::string& s);

} // namespace simba::backend::pg
