#pragma once
// The password from the [client] group of a MySQL option file
// (docs/backends/mysql.md, "The password"): the URI's ?option-file=, else
// ~/.my.cnf; read only when neither the URI nor SIMBA_MYSQL_PASSWORD gives
// one. Only the password: the URI names the server and the user, and a
// file written for the mysql client must not send simba elsewhere.
//
// A file that others than its owner may write (its group or everyone), or
// that another user owns (root aside), is not read: whoever can change it
// can change the password simba sends (the mysql client likewise ignores
// a world-writable file, and says so). ?option-file= names a file that
// must be there and safe: else exit 69; ~/.my.cnf is skipped when it is
// not, and a refused login says why.
#include "backend/uri.hpp"

#include <optional>
#include <string>

namespace simba::backend::mysql {

// The last `password` of the [client] group of an option file's text (the
// mysql client's syntax: '#' and ';' comments, quoted values and their
// escapes, '-' or '_' in names); nullopt when it has none. !include and
// !includedir are not followed.
std::optional<std::string> client_password(const std::string& text);

// Fills uri.password (and uri.secrets, uri.password_note) from the option
// file when the URI and the environment gave none. "" or why not (a
// ?option-file= that is missing, unreadable or unsafe).
std::string apply_option_file(MysqlUri& uri);

} // namespace simba::backend::mysql
