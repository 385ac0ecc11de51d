// What the PostgreSQL backend's errors say (messages.hpp).
#include "backend/postgres/messages.hpp"

namespace simba::backend::pg {

std::string primary_message(const std::string& error) {
  // libpq puts the statement's position on lines of its own ("LINE 4: ..."
  // and a caret), which Connection joins into one line.
  std::string text = error.substr(0, error.find('\n'));
  text = text.substr(0, text.find(" LINE "));
  const std::string severity = "ERROR:  ";
  return text.rfind(severity, 0) == 0 ? text.substr(severity.size()) : text;
}

std::string connect_hint(const std::string& why) {
  if (why.find("unsupported startup parameter") != std::string::npos)
    return " (PgBouncer? add options to its ignore_startup_parameters, and set the timeouts "
           "on the role: see the PostgreSQL backend's docs)";
  if (why.find("no password supplied") != std::string::npos)
    return " (give the password in PGPASSWORD, in ~/.pgpass (mode 0600), or in the URI)";
  return "";
}

} // namespace simba::backend::pg
