// The pieces of simba's PostgreSQL client that need no server: the URI and
// environment read as libpq reads them, the password file and its
// permission rule, the protocol's framing, MD5 (issue 33 §1).
#include "backend/postgres/conninfo.hpp"
#include "backend/postgres/md5.hpp"
#include "backend/postgres/pgpass.hpp"
#include "backend/postgres/wire.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace simba::backend::pg;
using namespace std::string_literals;

namespace {

// libpq's environment cleared for one test, restored after.
struct CleanEnv {
  static constexpr const char* names[] = {
      "PGHOST",    "PGPORT",        "PGUSER",    "PGPASSWORD",        "PGDATABASE",
      "PGSSLMODE", "PGSSLROOTCERT", "PGAPPNAME", "PGCONNECT_TIMEOUT", "PGOPTIONS"};
  std::string saved[10];
  bool had[10] = {};
  CleanEnv() {
    for (int i = 0; i < 10; ++i) {
      if (const char* v = std::getenv(names[i])) had[i] = true, saved[i] = v;
      unsetenv(names[i]);
    }
  }
  ~CleanEnv() {
    for (int i = 0; i < 10; ++i)
      if (had[i])
        setenv(names[i], saved[i].c_str(), 1);
      else
        unsetenv(names[i]);
  }
};

ConnInfo parse(const std::string& uri, const std::map<std::string, std::string>& d = {}) {
  ConnInfo ci;
  std::string why = parse_conninfo(uri, d, ci);
  INFO(why);
  REQUIRE(why.empty());
  return ci;
}

std::string refusal(const std::string& uri) {
  ConnInfo ci;
  return parse_conninfo(uri, {}, ci);
}

} // namespace

TEST_CASE("conninfo: the URI's parts, host lists, IPv6, percent escapes") {
  CleanEnv env;
  ConnInfo ci = parse("postgres://us%40er:p%3Ass@db1:5433,[::1]:6000,db3/my%2Fdb?sslmode=require");
  CHECK(ci.user == "us@er");
  CHECK(ci.password == "p:ss");
  CHECK(ci.dbname == "my/db");
  REQUIRE(ci.endpoints.size() == 3);
  CHECK(ci.endpoints[0].host == "db1");
  CHECK(ci.endpoints[0].port == 5433);
  CHECK(ci.endpoints[1].host == "::1");
  CHECK(ci.endpoints[1].port == 6000);
  CHECK(ci.endpoints[2].port == 5432);
  CHECK(ci.sslmode == "require");
}

TEST_CASE("conninfo: a Unix socket directory as host=, the default socket") {
  CleanEnv env;
  ConnInfo ci = parse("postgres://u@/db?host=%2Fvar%2Frun%2Fpg&port=5439");
  REQUIRE(ci.endpoints.size() == 1);
  CHECK(ci.endpoints[0].unix_socket());
  CHECK(ci.endpoints[0].socket_path() == "/var/run/pg/.s.PGSQL.5439");
  ConnInfo local = parse("postgres:///db");
  CHECK(local.endpoints[0].socket_path() == "/var/run/postgresql/.s.PGSQL.5432");
}

TEST_CASE("conninfo: the URI wins over simba's defaults, which win over the environment") {
  CleanEnv env;
  setenv("PGHOST", "envhost", 1);
  setenv("PGUSER", "envuser", 1);
  setenv("PGOPTIONS", "-c x=1", 1);
  setenv("PGAPPNAME", "envapp", 1);
  ConnInfo ci =
      parse("postgres:///db?application_name=mine",
            {{"options", "-c statement_timeout=5"}, {"fallback_application_name", "simba"}});
  CHECK(ci.endpoints[0].host == "envhost");
  CHECK(ci.user == "envuser");
  CHECK(ci.options == "-c statement_timeout=5");
  CHECK(ci.application_name == "mine");
  ConnInfo fallback = parse("postgres:///db", {{"fallback_application_name", "simba"}});
  CHECK(fallback.application_name == "envapp");
  unsetenv("PGAPPNAME");
  CHECK(parse("postgres:///db", {{"fallback_application_name", "simba"}}).application_name ==
        "simba");
}

TEST_CASE("conninfo: sslmode and its root certificate, as libpq") {
  CleanEnv env;
  CHECK(parse("postgres://h/db").sslmode == "prefer");
  CHECK(parse("postgres://h/db?sslrootcert=system").sslmode == "verify-full");
  CHECK(parse("postgres://h/db?sslmode=require&sslrootcert=/ca.crt").sslmode == "verify-ca");
  CHECK(refusal("postgres://h/db?sslmode=require&sslrootcert=system").find("weak sslmode") !=
        std::string::npos);
  std::string home = std::getenv("HOME") ? std::getenv("HOME") : "";
  setenv("HOME", "/nonexistent-home", 1);
  CHECK(refusal("postgres://h/db?sslmode=verify-full").find("needs a root certificate") !=
        std::string::npos);
  setenv("HOME", home.c_str(), 1);
  CHECK(refusal("postgres://h/db?sslmode=maybe").find("invalid sslmode") != std::string::npos);
}

TEST_CASE("conninfo: what is not supported is refused by name, never dropped") {
  CleanEnv env;
  CHECK(refusal("postgres://h/db?service=x").find("service") != std::string::npos);
  CHECK(refusal("postgres://h/db?channel_binding=require").find("channel_binding") !=
        std::string::npos);
  CHECK(refusal("postgres://h/db?nosuch=1").find("nosuch") != std::string::npos);
  CHECK(refusal("postgres://h:99999/db").find("port") != std::string::npos);
  CHECK(refusal("postgres://h/db?target_session_attrs=x").find("target_session_attrs") !=
        std::string::npos);
  CHECK(parse("postgres://h/db?scram_cache=off").scram_cache == false);
  CHECK(parse("postgres://h/db?connect_timeout=1").connect_timeout_s == 2);
}

TEST_CASE("pgpass: wildcards, escapes, the first match, and the permission rule") {
  char tmpl[] = "/tmp/simba-pgpass-XXXXXX";
  int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(tmpl) << "# comment\n"
                         "other:*:*:*:no\n"
                         "db\\:x:5432:app:u:first\\:pw\n"
                         "*:*:*:u:second\n"
                         "localhost:5432:*:*:local\n";
  chmod(tmpl, 0600);
  CHECK(passfile_password(tmpl, "db:x", 5432, "app", "u").password == "first:pw");
  CHECK(passfile_password(tmpl, "db:x", 5433, "app", "u").password == "second");
  CHECK(passfile_password(tmpl, "/var/run/postgresql", 5432, "d", "v").password == "local");
  CHECK(passfile_password(tmpl, "h", 1, "d", "nobody").password.empty());
  chmod(tmpl, 0640);
  PassfileLookup p = passfile_password(tmpl, "db:x", 5432, "app", "u");
  CHECK(p.password.empty());
  CHECK(p.ignored_for_mode);
  unlink(tmpl);
}

TEST_CASE("wire: framing, truncated and oversized messages") {
  std::string out;
  size_t at = wire::begin(out, 'Q');
  wire::put_str(out, "SELECT 1");
  wire::end(out, at);
  CHECK(out == "Q\0\0\0\x0dSELECT 1\0"s);
  std::string in = "Z\0\0\0\x05I"s + "D\0\0\0\x10"s;
  size_t pos = 0;
  wire::Message m;
  std::string why;
  CHECK(wire::take(in, pos, m, 100, why) == 1);
  CHECK(m.type == 'Z');
  CHECK(m.body == "I");
  CHECK(wire::take(in, pos, m, 100, why) == 0); // the DataRow is not all there
  std::string huge("D\x7f\xff\xff\xff", 5);
  pos = 0;
  CHECK(wire::take(huge, pos, m, 1 << 20, why) == -1);
  CHECK(why.find("oversized") != std::string::npos);
  std::string body("\0\x01", 2); // an Int16 then nothing: an Int32 past the end
  wire::Reader r(body);
  CHECK(r.i16() == 1);
  CHECK(r.i32() == 0);
  CHECK_FALSE(r.ok());
}

TEST_CASE("wire: ErrorResponse fields, one line") {
  std::string body = "SFATAL\0C28P01\0Mpassword authentication failed\0Dno\nway\0\0"s;
  wire::ServerError e = wire::parse_error(body);
  CHECK(e.sqlstate == "28P01");
  CHECK(wire::error_text(e) == "FATAL:  password authentication failed DETAIL:  no way");
}

TEST_CASE("md5: RFC 1321's vectors and PostgreSQL's password hash") {
  CHECK(md5_hex("") == "d41d8cd98f00b204e9800998ecf8427e");
  CHECK(md5_hex("abc") == "900150983cd24fb0d6963f7d28e17f72");
  CHECK(
      md5_hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890") ==
      "57edf4a22be3c955ac49da2e2107b67a");
  // md5(md5("secret" + "alice") + salt): "md5" + 32 hex digits.
  std::string sent = md5_password("secret", "alice", "\x01\x02\x03\x04"s);
  CHECK(sent.size() == 35);
  CHECK(sent == "md5" + md5_hex(md5_hex("secretalice") + "\x01\x02\x03\x04"s));
}
