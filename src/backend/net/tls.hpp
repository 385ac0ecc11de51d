#pragma once
// TLS on a connected socket, every call bounded by a deadline like the plain
// socket I/O of deadline_io.hpp.
//
// OpenSSL only encrypts and decrypts here, between two memory buffers: the
// bytes on the socket go through deadline_io (poll against the deadline,
// MSG_NOSIGNAL, non-blocking), so a TLS connection keeps every property of a
// plain one, including the count of what left (a TLS record reaches the
// server whole or not at all). Each receive decrypts every complete record:
// nothing decrypted waits inside OpenSSL, so polling the socket tells the
// truth. OpenSSL is set up on first use (openssl_setup.hpp).
#include <cstddef>
#include <cstdint>
#include <string>

struct ssl_st;

namespace simba::backend::net {

struct TlsOptions {
  std::string host;      // the name (or address) checked in the certificate; SNI
  std::string ca_file;   // "" = the system's store
  std::string cert_file; // a client certificate (and its key), or ""
  std::string key_file;
  bool insecure = false;  // no verification of the server at all
  bool check_name = true; // false: the chain only (PostgreSQL's sslmode=verify-ca)
};

class TlsSession {
public:
  TlsSession() = default;
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;
  ~TlsSession();

  // The handshake on connected socket `fd`, TLS 1.2 or newer, the server
  // verified unless `insecure`; "" or why not (k_timed_out at the deadline).
  std::string start(int fd, const TlsOptions& o, int64_t deadline);

  // send_all() of deadline_io for `plain`: `sent` is 0 while no byte left
  // the socket, else how much of `plain` may have reached the server.
  std::string send_all(int fd, const std::string& plain, int64_t deadline, size_t& sent);

  // One non-blocking recv(): what it brought, decrypted, appended to
  // `plain`; `got` is false when the socket had nothing. "" or why the
  // connection is unusable.
  std::string receive_some(int fd, std::string& plain, bool& got);

  // When the server's certificate expires (Unix seconds), -1 when unknown
  // (no handshake, or ?insecure=1 and no certificate): simba doctor warns
  // before it does.
  int64_t peer_not_after() const;

private:
  std::string flush(int fd, int64_t deadline);
  // One recv() into m_in, not decrypted yet.
  std::string take_in(int fd, bool& got);
  std::string failure(int ret, const char* during);

  ssl_st* m_ssl = nullptr;
  void* m_in = nullptr;  // BIO*: what came from the socket, not yet decrypted
  void* m_out = nullptr; // BIO*: what OpenSSL wrote, not yet sent
  std::string m_unsent;  // taken from m_out, not yet on the socket
  bool m_insecure = false;
  bool m_certificate_asked = false; // and we had none
  std::string m_session_key; // the server and how it is verified (tls.cpp: sessions())
};

} // namespace simba::backend::net
