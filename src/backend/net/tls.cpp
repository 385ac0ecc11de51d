// TLS between memory buffers, the socket I/O with deadlines (tls.hpp).
#include "backend/net/tls.hpp"

#include "backend/net/deadline_io.hpp"
#include "backend/net/openssl_setup.hpp"
#include "sys/clock.hpp"

#include <arpa/inet.h>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <map>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/x509_vfy.h>
#include <poll.h>

namespace simba::backend::net {
namespace {

const char* const k_certificate_hint =
    " (the server wants a client certificate: ?cert=FILE&key=FILE)";

bool is_address(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// A directory of certificates named by their subject's hash (c_rehash, as
// Debian's ca-certificates keeps /etc/ssl/certs)?
bool has_hash_links(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    const char* n = e->d_name;
    size_t len = std::strlen(n);
    if (len == 10 && n[8] == '.' && std::strspn(n, "0123456789abcdef") == 8) {
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

// The system's store as OpenSSL's default paths name it, but read lazily:
// the default file (the whole bundle, parsed at once) costs some 20 ms per
// process, the hashed directory only the certificates a chain needs. The
// bundle only when the directory has no hash links, or SSL_CERT_FILE names
// a file.
int load_system_store(SSL_CTX* ctx) {
  const char* file = std::getenv(X509_get_default_cert_file_env());
  const char* dir = std::getenv(X509_get_default_cert_dir_env());
  if (!dir) dir = X509_get_default_cert_dir();
  if (file || !dir || !has_hash_links(dir)) return SSL_CTX_set_default_verify_paths(ctx);
  return SSL_CTX_load_verify_locations(ctx, nullptr, dir);
}

std::string load_verification(SSL_CTX* ctx, const TlsOptions& o) {
  if (o.insecure) return ""; // SSL_VERIFY_NONE, OpenSSL's default
  int ok = o.ca_file.empty() ? load_system_store(ctx)
                             : SSL_CTX_load_verify_locations(ctx, o.ca_file.c_str(), nullptr);
  if (ok != 1)
    return (o.ca_file.empty() ? std::string("TLS: cannot load the system's CA certificates")
                              : "TLS: cannot read the CA file " + o.ca_file) +
           ": " + openssl_error();
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  return "";
}

// Called by OpenSSL when the server asks for a client certificate and we
// have none: remembered for the message when the server then hangs up (a
// TLS 1.3 server says why in an alert that a reset connection may lose).
int note_certificate_request(SSL* ssl, X509**, EVP_PKEY**) {
  if (auto* asked = static_cast<bool*>(SSL_get_ex_data(ssl, 0))) *asked = true;
  return 0; // none
}

std::string load_client_certificate(SSL_CTX* ctx, const TlsOptions& o) {
  if (o.cert_file.empty()) {
    SSL_CTX_set_client_cert_cb(ctx, note_certificate_request);
    return "";
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, o.cert_file.c_str()) != 1)
    return "TLS: cannot read the client certificate file " + o.cert_file + ": " + openssl_error();
  if (SSL_CTX_use_PrivateKey_file(ctx, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1)
    return "TLS: cannot read the client key file " + o.key_file + ": " + openssl_error();
  return "";
}

// The TLS session of the process's last verified connection to each
// server, so that the next one within seconds (a waiter's subscription,
// after its first call) resumes it instead of decoding and verifying the
// certificates again (~5 M instructions). No weaker than keeping the first
// connection open those seconds: a session is resumed only within
// k_resume_s of its own full handshake, and only by a connection that
// would have verified the same way (session_key()). In memory only: a
// session file would be a ticket another local user could plant.
constexpr int64_t k_resume_s = 10;

std::map<std::string, SSL_SESSION*>& sessions() {
  static std::map<std::string, SSL_SESSION*> kept;
  return kept;
}

// Where a connection's key is, for remember_session().
int key_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// OpenSSL's new-session callback (TLS 1.3 sends sessions after the
// handshake, read with the first reply): 1, the session is ours to free.
// Not a resumed connection's: its k_resume_s would start again without a
// verification.
int remember_session(SSL* ssl, SSL_SESSION* session) {
  auto* key = static_cast<const std::string*>(SSL_get_ex_data(ssl, key_index()));
  if (!key || SSL_session_reused(ssl)) return 0;
  SSL_SESSION*& kept = sessions()[*key];
  if (kept) SSL_SESSION_free(kept);
  kept = session;
  return 1;
}

std::string options_key(const TlsOptions& o) {
  return o.ca_file + '\n' + o.cert_file + '\n' + o.key_file + (o.insecure ? "\n1" : "");
}

// The server a session belongs to, and how it was verified: the name
// checked (or not), on this address and port.
std::string session_key(int fd, const TlsOptions& o) {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  char host[INET6_ADDRSTRLEN + 8] = "";
  uint16_t port = 0;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0) {
    const void* addr = peer.ss_family == AF_INET6
                           ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&peer)->sin6_addr)
                           : &reinterpret_cast<sockaddr_in*>(&peer)->sin_addr;
    inet_ntop(peer.ss_family, addr, host, sizeof host);
    port = ntohs(peer.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&peer)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&peer)->sin_port);
  }
  return options_key(o) + '\n' + o.host + (o.check_name ? "\nname" : "\nchain") + '\n' + host +
         ':' + std::to_string(port);
}

// One context per process and options: every connection of a run has the
// same, and the system's CA store is read once.
std::string context(const TlsOptions& o, SSL_CTX*& out) {
  static std::string cached_key;
  static SSL_CTX* cached = nullptr;
  std::string key = options_key(o);
  if (cached && key == cached_key) {
    out = cached;
    return "";
  }
  std::string err;
  SSL_CTX* ctx = new_client_context(err);
  if (!ctx) return err;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, remember_session);
  err = load_verification(ctx, o);
  if (err.empty()) err = load_client_certificate(ctx, o);
  if (!err.empty()) {
    SSL_CTX_free(ctx);
    return err;
  }
  if (cached) SSL_CTX_free(cached);
  cached = out = ctx;
  cached_key = key;
  return "";
}

} // namespace

TlsSession::~TlsSession() {
  if (m_ssl) SSL_free(m_ssl); // and its two BIOs
}

int64_t TlsSession::peer_not_after() const {
  if (!m_ssl) return -1;
  X509* cert = SSL_get1_peer_certificate(m_ssl);
  if (!cert) return -1;
  std::tm t{};
  const ASN1_TIME* end = X509_get0_notAfter(cert);
  bool ok = end && ASN1_TIME_to_tm(end, &t) == 1;
  X509_free(cert);
  return ok ? int64_t(timegm(&t)) : -1;
}

std::string TlsSession::start(int fd, const TlsOptions& o, int64_t deadline) {
  SSL_CTX* ctx = nullptr;
  std::string err = context(o, ctx); // OpenSSL's set-up first: openssl_setup.cpp
  if (!err.empty()) return err;
  ERR_clear_error();
  m_insecure = o.insecure;
  m_ssl = SSL_new(ctx);
  if (!m_ssl) return "TLS: cannot set up: " + openssl_error();
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(m_ssl, in, out); // owned by m_ssl from here
  m_in = in;
  m_out = out;
  if (!in || !out) return "TLS: out of memory";
  SSL_set_connect_state(m_ssl);
  SSL_set_ex_data(m_ssl, 0, &m_certificate_asked);
  m_session_key = session_key(fd, o);
  SSL_set_ex_data(m_ssl, key_index(), &m_session_key);
  auto kept = sessions().find(m_session_key);
  if (kept != sessions().end() && time(nullptr) - SSL_SESSION_get_time(kept->second) <= k_resume_s)
    SSL_set_session(m_ssl, kept->second); // resumed if the server agrees
  bool address = is_address(o.host);
  // SNI carries names only; the certificate must name what we connected to.
  if (!address)
    SSL_set_tlsext_host_name(m_ssl, o.host.c_str());
  if (!o.insecure && o.check_name) {
    int ok = address ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(m_ssl), o.host.c_str())
                     : SSL_set1_host(m_ssl, o.host.c_str());
    if (ok != 1) return "TLS: cannot check the server's name " + o.host;
  }
  for (;;) {
    ERR_clear_error();
    int r = SSL_do_handshake(m_ssl);
    int code = r == 1 ? SSL_ERROR_NONE : SSL_get_error(m_ssl, r);
    if (code != SSL_ERROR_NONE && code != SSL_ERROR_WANT_READ) {
      std::string why = failure(r, "handshake");
      flush(fd, sys::boottime_ms()); // the alert that tells the server why, if it can
      return why;
    }
    err = flush(fd, deadline);
    if (!err.empty()) return err;
    if (code == SSL_ERROR_NONE) return "";
    if (!wait_for(fd, POLLIN, deadline)) return k_timed_out;
    bool got = false;
    err = take_in(fd, got);
    if (!err.empty()) return err + " during the TLS handshake (is that port TLS?)";
  }
}

std::string TlsSession::send_all(int fd, const std::string& plain, int64_t deadline, size_t& sent) {
  sent = 0;
  size_t before = m_unsent.size(); // not ours: OpenSSL's answer to a read
  if (!plain.empty()) {
    ERR_clear_error();
    // A memory BIO takes every record at once: the write is never partial.
    int r = SSL_write(m_ssl, plain.data(), static_cast<int>(plain.size()));
    if (r <= 0) return failure(r, "write");
  }
  char buf[16384];
  for (int n; (n = BIO_read(static_cast<BIO*>(m_out), buf, sizeof buf)) > 0;)
    m_unsent.append(buf, static_cast<size_t>(n));
  size_t left = 0;
  std::string err = net::send_all(fd, m_unsent, deadline, left);
  if (!err.empty() && err != k_timed_out && m_certificate_asked) err += k_certificate_hint;
  if (left > before) sent = m_unsent.size() == left ? plain.size() : left - before;
  m_unsent.erase(0, left);
  return err;
}

std::string TlsSession::flush(int fd, int64_t deadline) {
  size_t sent = 0;
  return send_all(fd, "", deadline, sent);
}

std::string TlsSession::take_in(int fd, bool& got) {
  char buf[16384];
  size_t n = 0;
  std::string err = net::receive_some(fd, buf, sizeof buf, n);
  got = n > 0;
  if (got) BIO_write(static_cast<BIO*>(m_in), buf, static_cast<int>(n)); // takes all
  return err;
}

std::string TlsSession::receive_some(int fd, std::string& plain, bool& got) {
  std::string err = take_in(fd, got);
  if (!err.empty() && m_certificate_asked) err += k_certificate_hint;
  if (!err.empty() || !got) return err;
  char buf[16384];
  for (;;) {
    ERR_clear_error();
    int r = SSL_read(m_ssl, buf, sizeof buf);
    if (r > 0) {
      plain.append(buf, static_cast<size_t>(r));
      continue;
    }
    int code = SSL_get_error(m_ssl, r);
    if (code == SSL_ERROR_WANT_READ) break; // every complete record is decrypted
    if (code == SSL_ERROR_ZERO_RETURN) return "the server closed the connection";
    return failure(r, "read");
  }
  // Whatever OpenSSL answered (a key update) leaves now if it can, else
  // before the next request.
  flush(fd, sys::boottime_ms());
  return "";
}

std::string TlsSession::failure(int ret, const char* during) {
  long verdict = SSL_get_verify_result(m_ssl);
  if (!m_insecure && verdict != X509_V_OK) {
    ERR_clear_error();
    return std::string("TLS: the server's certificate is not trusted: ") +
           X509_verify_cert_error_string(verdict);
  }
  std::string why = openssl_error();
  if (why.empty()) why = "error " + std::to_string(SSL_get_error(m_ssl, ret));
  std::string msg = std::string("TLS ") + during + " failed: " + why;
  if (why.find("certificate required") != std::string::npos || m_certificate_asked)
    msg += k_certificate_hint;
  else if (why.find("wrong version number") != std::string::npos ||
           why.find("packet length too long") != std::string::npos)
    msg += " (is that port TLS?)";
  return msg;
}

} // namespace simba::backend::net
