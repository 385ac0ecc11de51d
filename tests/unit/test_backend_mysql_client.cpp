// The MySQL client's pieces without a server: SHA-1 against FIPS 180's
// vectors, mysql_native_password's scramble, the packets' integers and
// strings (a truncated packet never reads past its end), hex literals, and
// the URI (docs/backends/mysql.md).
#include "backend/mysql/doctor.hpp"
#include "backend/mysql/packets.hpp"
#include "backend/mysql/sha1.hpp"
#include "backend/uri.hpp"
#include "core/error.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

using namespace simba::backend;

namespace {

std::string hex(const mysql::Sha1Digest& d) {
  static const char* k = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) out += std::string{k[b >> 4], k[b & 15]};
  return out;
}

std::string usage_error_of(const std::string& uri) {
  try {
    parse_backend_uri(uri);
  } catch (const simba::UsageError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("mysql: SHA-1 gives FIPS 180's digests") {
  CHECK(hex(mysql::Sha1::of("")) == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  CHECK(hex(mysql::Sha1::of("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d");
  CHECK(hex(mysql::Sha1::of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
        "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  mysql::Sha1 million;
  std::string a(1000, 'a');
  for (int i = 0; i < 1000; ++i) million.update(a);
  CHECK(hex(million.finish()) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST_CASE("mysql: mysql_native_password's scramble") {
  // SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw))), checked against its
  // definition; an empty password sends nothing.
  const std::string scramble = "0123456789abcdefghij";
  std::string got = mysql::native_password_scramble("secret", scramble);
  REQUIRE(got.size() == 20);
  mysql::Sha1Digest s1 = mysql::Sha1::of("secret");
  mysql::Sha1Digest s2 = mysql::Sha1::of({reinterpret_cast<const char*>(s1.data()), 20});
  mysql::Sha1 h;
  h.update(scramble);
  h.update(s2.data(), 20);
  mysql::Sha1Digest mix = h.finish();
  for (size_t i = 0; i < 20; ++i) CHECK(static_cast<uint8_t>(got[i]) == (s1[i] ^ mix[i]));
  CHECK(mysql::native_password_scramble("", scramble).empty());
}

TEST_CASE("mysql: packets' numbers and strings; a short packet is not ok, never read past") {
  std::string p;
  mysql::wire::put_lenenc(p, 250);
  mysql::wire::put_lenenc(p, 251);
  mysql::wire::put_lenenc(p, 70000);
  mysql::wire::put_lenenc(p, uint64_t(1) << 40);
  mysql::wire::Reader in(p);
  CHECK(in.lenenc() == 250);
  CHECK(in.lenenc() == 251);
  CHECK(in.lenenc() == 70000);
  CHECK(in.lenenc() == uint64_t(1) << 40);
  CHECK(in.ok());
  CHECK(in.done());
  mysql::wire::Reader shorter(std::string("\x05" "abc", 4));
  bool null = false;
  CHECK(shorter.lenenc_string(null).empty());
  CHECK_FALSE(shorter.ok());
  mysql::wire::Reader nul(std::string("\xfb", 1));
  nul.lenenc_string(null);
  CHECK(null);
  CHECK(mysql::wire::packet(3, "ab") == std::string("\x02\x00\x00\x03" "ab", 6));
  mysql::wire::ServerError e = mysql::wire::read_error(
      std::string("\xff\x15\x04#28000Access denied\nfor user", 31));
  CHECK(e.line() == "ERROR 1045 (28000): Access denied for user");
}

TEST_CASE("mysql: strings go into the SQL as hex literals") {
  CHECK(mysql::wire::hex_literal("a'b") == "X'612762'");
  CHECK(mysql::wire::hex_literal("") == "X''");
}

TEST_CASE("mysql: URIs, their parameters and refusals; the password never shown") {
  unsetenv(k_mysql_password_env);
  auto u = std::get<MysqlUri>(parse_backend_uri("mysql://app:p%40ss@db.example:3307/locks"));
  CHECK(u.user == "app");
  CHECK(u.password == "p@ss");
  CHECK(u.host == "db.example");
  CHECK(u.port == 3307);
  CHECK(u.database == "locks");
  CHECK(u.tls == MysqlUri::Tls::prefer);
  CHECK(u.shown.find("p%40ss") == std::string::npos);
  auto v = std::get<MysqlUri>(parse_backend_uri(
      "mariadb://app@[::1]/locks?socket=/run/mysqld/mysqld.sock&tls=verify-full&cacert=/ca.pem"
      "&timeout=500ms&prefix=ci_"));
  CHECK(v.host == "::1");
  CHECK(v.port == 3306);
  CHECK(v.socket == "/run/mysqld/mysqld.sock");
  CHECK(v.tls == MysqlUri::Tls::verify_full);
  CHECK(v.cacert == "/ca.pem");
  CHECK(v.timeout_ms == 500);
  CHECK(v.prefix == "ci_");
  setenv(k_mysql_password_env, "from-env", 1);
  CHECK(std::get<MysqlUri>(parse_backend_uri("mysql://app@h/db")).password == "from-env");
  CHECK(std::get<MysqlUri>(parse_backend_uri("mysql://app:uri@h/db")).password == "uri");
  unsetenv(k_mysql_password_env);
  CHECK(usage_error_of("mysql://app@h") ==
        "invalid backend URI 'mysql://***@h': no database "
        "(mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE)");
  CHECK(usage_error_of("mysql://h/db") ==
        "invalid backend URI 'mysql://h/db': no user name "
        "(mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE)");
  CHECK(usage_error_of("mysql://a@h/db?tls=maybe").find("tls is disable, prefer") !=
        std::string::npos);
  CHECK(usage_error_of("mysql://a@h/db?prefix=a-b").find("the prefix may hold") !=
        std::string::npos);
  CHECK(usage_error_of("mysql://a@h/db?bogus=1").find("unknown parameter 'bogus'") !=
        std::string::npos);
  // NUL ends the user and the database in the login packet: what follows
  // would be read as its next fields (the password's answer, the method).
  CHECK(usage_error_of("mysql://a%00b@h/db").find("no NUL") != std::string::npos);
  CHECK(usage_error_of("mysql://a@h/db%00mysql_clear_password").find("no NUL") !=
        std::string::npos);
  std::string forgot = usage_error_of("mysql://app:hunter2/db");
  CHECK(forgot.find("hunter2") == std::string::npos);
  CHECK(forgot.find("the port must be a number") != std::string::npos);
}

// The command a user without CREATE is told to have an administrator run
// (simba doctor --sql mysql --backend '...'): pasted into a shell, so no
// name of the URI may end its single quotes; and it names the same user,
// database and prefix (all the SQL depends on: it never connects).
TEST_CASE("mysql: the setup command quotes every name for a shell, and parses back") {
  unsetenv(k_mysql_password_env);
  for (const char* uri : {"mysql://o%27hara@db%27x:3307/we%27ird?prefix=ci_",
                          "mysql://app@[::1]/db?socket=/tmp/a%27b;touch%20x;%27/s.sock"}) {
    auto u = std::get<MysqlUri>(parse_backend_uri(uri));
    const std::string cmd = mysql::setup_command(u);
    const size_t open = cmd.find("--backend '"), close = cmd.rfind("'");
    REQUIRE(open != std::string::npos);
    const std::string quoted = cmd.substr(open + 11, close - open - 11);
    CHECK(quoted.find('\'') == std::string::npos);
    auto back = std::get<MysqlUri>(parse_backend_uri(quoted));
    CHECK(back.user == u.user);
    CHECK(back.database == u.database);
    CHECK(back.prefix == u.prefix);
  }
}
