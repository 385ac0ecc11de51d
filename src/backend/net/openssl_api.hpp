#pragma once
// OpenSSL 3, loaded only when a connection needs TLS (rediss://).
//
// simba is linked statically and starts in well under a millisecond: loading
// libssl and libcrypto at start-up (or initialising them) would cost every
// SQLite and plain-Redis run more than its whole lock round trip. So the few
// functions TLS needs are looked up with dlopen() the first time a TLS
// connection is made, and kept here as pointers. The headers give the types
// only: nothing below links against OpenSSL.
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <string>

namespace simba::backend::net {

struct OpenSslApi {
#define SIMBA_OPENSSL_FN(name) decltype(&::name) name = nullptr
  // libssl
  SIMBA_OPENSSL_FN(TLS_client_method);
  SIMBA_OPENSSL_FN(SSL_CTX_new);
  SIMBA_OPENSSL_FN(SSL_CTX_free);
  SIMBA_OPENSSL_FN(SSL_CTX_ctrl);
  SIMBA_OPENSSL_FN(SSL_CTX_set_options);
  SIMBA_OPENSSL_FN(SSL_CTX_set_verify);
  SIMBA_OPENSSL_FN(SSL_CTX_set_default_verify_paths);
  SIMBA_OPENSSL_FN(SSL_CTX_load_verify_locations);
  SIMBA_OPENSSL_FN(SSL_CTX_use_certificate_chain_file);
  SIMBA_OPENSSL_FN(SSL_CTX_use_PrivateKey_file);
  SIMBA_OPENSSL_FN(SSL_CTX_check_private_key);
  SIMBA_OPENSSL_FN(SSL_CTX_set_client_cert_cb);
  SIMBA_OPENSSL_FN(SSL_set_ex_data);
  SIMBA_OPENSSL_FN(SSL_get_ex_data);
  SIMBA_OPENSSL_FN(SSL_new);
  SIMBA_OPENSSL_FN(SSL_free);
  SIMBA_OPENSSL_FN(SSL_ctrl);
  SIMBA_OPENSSL_FN(SSL_set_bio);
  SIMBA_OPENSSL_FN(SSL_set_connect_state);
  SIMBA_OPENSSL_FN(SSL_set1_host);
  SIMBA_OPENSSL_FN(SSL_get0_param);
  SIMBA_OPENSSL_FN(SSL_do_handshake);
  SIMBA_OPENSSL_FN(SSL_read);
  SIMBA_OPENSSL_FN(SSL_write);
  SIMBA_OPENSSL_FN(SSL_get_error);
  SIMBA_OPENSSL_FN(SSL_get_verify_result);
  SIMBA_OPENSSL_FN(SSL_get1_peer_certificate); // simba doctor: the certificate's expiry
  // libcrypto
  SIMBA_OPENSSL_FN(BIO_new);
  SIMBA_OPENSSL_FN(BIO_s_mem);
  SIMBA_OPENSSL_FN(BIO_read);
  SIMBA_OPENSSL_FN(BIO_write);
  SIMBA_OPENSSL_FN(BIO_ctrl_pending);
  SIMBA_OPENSSL_FN(ERR_get_error);
  SIMBA_OPENSSL_FN(ERR_clear_error);
  SIMBA_OPENSSL_FN(ERR_reason_error_string);
  SIMBA_OPENSSL_FN(X509_verify_cert_error_string);
  SIMBA_OPENSSL_FN(X509_VERIFY_PARAM_set1_ip_asc);
  SIMBA_OPENSSL_FN(X509_get_default_cert_dir);
  SIMBA_OPENSSL_FN(X509_get_default_cert_dir_env);
  SIMBA_OPENSSL_FN(X509_get_default_cert_file_env);
  SIMBA_OPENSSL_FN(X509_get0_notAfter);
  SIMBA_OPENSSL_FN(X509_free);
  SIMBA_OPENSSL_FN(ASN1_TIME_to_tm);
#undef SIMBA_OPENSSL_FN
};

// The loaded functions, or nullptr with `error` set (one line for the user:
// which library is missing and which package has it). Loads once.
const OpenSslApi* openssl(std::string& error);

// The reason of OpenSSL's first queued error ("" when none); the queue is
// cleared.
std::string openssl_error(const OpenSslApi& api);

} // namespace simba::backend::net
