#pragma once
// The client side of SCRAM-SHA-256 (RFC 5802, RFC 7677), as PostgreSQL
// speaks it: no I/O, no crypto library. The connection sends
// client_first(), feeds the server's first message to client_final() and
// its last to verify_server_final(); the server's signature is always
// checked, so a server that does not know the password cannot pass for one.
//
// PBKDF2 is the cost (thousands of HMACs): the keys it gives can be kept
// (scram_cache.hpp) and passed back, keyed by the salt and iteration count.
#include "backend/postgres/sha256.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace simba::backend::pg::scram {

// The largest iteration count a server may ask for. PostgreSQL's default is
// 4096 (scram_iterations, PostgreSQL 16+); 1,000,000 is above what anyone
// recommends (OWASP: 600,000) and costs about a second at worst, where a
// hostile server's 2^31 would pin a CPU for minutes, past any deadline
// (PBKDF2 is not interrupted by the connection's timeout).
constexpr int k_max_iterations = 1'000'000;

// The SaltedPassword-derived keys (RFC 5802 §3), what the cache keeps.
struct Keys {
  std::array<uint8_t, 32> client_key{}, server_key{};
};

// Hi(password, salt, i) of RFC 5802 §2.2: PBKDF2-HMAC-SHA-256's first
// block, the HMAC's pads hashed once (not per round).
Digest salted_password(const std::string& password, const std::string& salt, int iterations);
// Hi(), then ClientKey and ServerKey.
Keys derive_keys(const std::string& password, const std::string& salt, int iterations);

class Client {
public:
  // `nonce`: printable, no comma (the caller draws it: 18 random bytes in
  // base64). `password` as given: SASLprep (RFC 4013) leaves ASCII as it
  // is; other bytes are used as they are too, which is what PostgreSQL does
  // when SASLprep fails, and what it gets from SASLprep for a password
  // already in NFKC without non-ASCII spaces or soft hyphens -- any other
  // password is refused as a wrong one. `user`: PostgreSQL ignores it
  // (libpq sends "n="); RFC 7677's example has one.
  Client(std::string password, std::string nonce, std::string user = {});

  std::string client_first() const; // "n,,n=,r=<nonce>"
  // Reads the server-first message ("r=...,s=...,i=..."): its nonce must
  // extend ours, its salt be base64, its iterations in [1, k_max_iterations]
  // (1: PostgreSQL lets scram_iterations be as low as 1, and libpq accepts
  // it). Fills `out` with the client-final message ("c=biws,r=...,p=...").
  // `keys`: with `cached`, used instead of deriving (a cache hit); else
  // derived and written there. false, and `why` (one line, never the
  // password), on anything malformed.
  bool client_final(const std::string& server_first, std::string& out, std::string& why,
                    Keys* keys = nullptr, bool cached = false);
  // The server-final message "v=<signature>" (or "e=<error>"): true only
  // when the signature is the one ServerKey gives; `why` otherwise.
  bool verify_server_final(const std::string& server_final, std::string& why) const;

  // The salt (decoded) and iterations of the server-first seen, for the
  // cache's key.
  const std::string& salt() const { return m_salt; }
  int iterations() const { return m_iterations; }

private:
  std::string m_password;
  std::string m_nonce;
  std::string m_first_bare; // "n=<user>,r=<nonce>"
  std::string m_salt;
  int m_iterations = 0;
  bool m_final_sent = false;
  Digest m_server_signature{}; // what server-final must say
};

} // namespace simba::backend::pg::scram
