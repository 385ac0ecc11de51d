// Users and groups by number (backend/accounts.hpp), read from files
// written here: the fields taken, lines that are not entries skipped.
#include "backend/accounts.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace simba::backend;

namespace {

// A file of `text` that is removed when the scope ends.
class TempFile {
public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/simba-accounts.XXXXXX";
    int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    m_path = name;
    std::ofstream(m_path) << text;
  }
  ~TempFile() { std::remove(m_path.c_str()); }
  const char* path() const { return m_path.c_str(); }

private:
  std::string m_path;
};

} // namespace

TEST_SUITE("backend::accounts") {
  TEST_CASE("a uid's name and home come from its passwd line") {
    TempFile passwd("root:x:0:0:root:/root:/bin/bash\n"
                    "# a comment\n"
                    "broken:x:1000\n"
                    ":x:1002:1002::/nowhere:/bin/sh\n"
                    "ada:x:1001:1001:Ada,,,:/home/ada:/bin/zsh\n"
                    "ada2:x:1001:1001::/home/ada2:/bin/sh\n");
    auto ada = accounts::user(1001, passwd.path());
    REQUIRE(ada);
    CHECK(ada->name == "ada"); // the first line of the uid
    CHECK(ada->home == "/home/ada");
    CHECK(accounts::user(0, passwd.path())->home == "/root");
    CHECK_FALSE(accounts::user(1000, passwd.path())); // too few fields
    CHECK_FALSE(accounts::user(1002, passwd.path())); // no name
    CHECK_FALSE(accounts::user(4242, passwd.path()));
    CHECK_FALSE(accounts::user(0, "/nonexistent/passwd"));
  }

  TEST_CASE("a gid's name comes from its group line") {
    TempFile group("root:x:0:\nstaff:x:50:ada,bob\n");
    CHECK(accounts::group_name(50, group.path()) == "staff");
    CHECK(accounts::group_name(0, group.path()) == "root");
    CHECK(accounts::group_name(51, group.path()).empty());
  }

  TEST_CASE("simba's user: its passwd name, else $USER") {
    auto me = accounts::user(geteuid());
    if (me)
      CHECK(accounts::effective_user_name() == me->name);
    else
      CHECK(accounts::effective_user_name() == (std::getenv("USER") ? std::getenv("USER") : ""));
  }
}
