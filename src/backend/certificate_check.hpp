#pragma once
// simba doctor on a server's TLS certificate (Redis and PostgreSQL): when
// it ends. A certificate that has ended fails every connection at once,
// so one that ends within 30 days is a warning.
#include "backend/diagnosis.hpp"

#include <cstdint>
#include <string>

namespace simba::backend {

// "tls": `what` is how the certificate was checked ("<label>the
// certificate of h:p is verified (...)"), `not_after_s` its end (Unix
// seconds), `setting` the server's setting that names the certificate
// file (for the fix). `now_s`: the wall clock (Unix seconds).
Finding certificate_finding(const std::string& what, int64_t not_after_s,
                            const std::string& setting, int64_t now_s);

} // namespace simba::backend
