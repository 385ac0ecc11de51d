// The [client] password of a MySQL option file, read as the mysql client
// reads it (backend/mysql/option_file.hpp): groups, comments, quotes and
// their escapes, the last setting of the group.
#include "backend/mysql/option_file.hpp"

#include <doctest/doctest.h>

using simba::backend::mysql::client_password;

TEST_CASE("mysql option file: the [client] group's password") {
  CHECK(client_password("[client]\npassword=s3cret\n") == "s3cret");
  CHECK(client_password("[client]\n  password  =  spaced  \n") == "spaced");
  CHECK(client_password("[mysqld]\npassword=no\n[client]\npassword=yes\n[mysql]\npassword=no\n") ==
        "yes");
  CHECK(client_password("[CLIENT]\npassword=a\npassword=b\n") == "b"); // the last one counts
  CHECK(client_password("[client]\n# password=commented\n; password=too\n") == std::nullopt);
  CHECK(client_password("[mysql]\npassword=not-client\n") == std::nullopt);
  CHECK(client_password("password=before-any-group\n") == std::nullopt);
  CHECK(client_password("[client]\npassword\n") == std::nullopt); // the client would prompt
  CHECK(client_password("[client]\r\npassword=crlf\r\n") == "crlf");
}

TEST_CASE("mysql option file: values") {
  CHECK(client_password("[client]\npassword=plain # a comment\n") == "plain");
  CHECK(client_password("[client]\npassword=\"has # and ' \"\n") == "has # and ' ");
  CHECK(client_password("[client]\npassword='a\\tb\\\\c\\'d\\s'\n") == "a\tb\\c'd ");
  CHECK(client_password("[client]\npass_word=x\n") == std::nullopt);
  CHECK(client_password("[client]\n!include /etc/other.cnf\npassword=x\n") == "x");
}
