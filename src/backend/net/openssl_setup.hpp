#pragma once
// OpenSSL 3, linked in statically and set up only when a connection needs
// TLS (rediss://, PostgreSQL's sslmode).
//
// Linked, not loaded: simba is a static glibc program, and one that
// dlopen()s system libraries needs, at run time, the shared libraries of
// the glibc it was linked with (a crash one distribution upgrade away).
// Set up lazily and lean: a SQLite or plain-Redis run never calls into
// OpenSSL, and a TLS run reads no openssl.cnf, uses only the default
// provider (built in: no module is loaded), and loads the error texts only
// for a message (docs/benchmarks.md has the instructions each saves).
#include <openssl/ssl.h>

#include <string>

namespace simba::backend::net {

// A new TLS client context (OpenSSL is set up on the first call), or
// nullptr with `error` set.
SSL_CTX* new_client_context(std::string& error);

// The reason of OpenSSL's first queued error ("" when none); the queue is
// cleared.
std::string openssl_error();

} // namespace simba::backend::net
