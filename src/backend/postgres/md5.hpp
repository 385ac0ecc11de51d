#pragma once
// MD5 (RFC 1321), for PostgreSQL's md5 password authentication only: the
// server asks for md5(md5(password + user) + salt), in hex. Not for anything
// that needs a secure hash.
#include <string>

namespace simba::backend::pg {

// The digest of `data` as 32 lowercase hex digits.
std::string md5_hex(const std::string& data);

// What the md5 method sends: "md5" + md5_hex(md5_hex(password + user) + salt).
std::string md5_password(const std::string& password, const std::string& user,
                         const std::string& salt);

} // namespace simba::backend::pg
