// OpenSSL set up on first use (openssl_setup.hpp).
//
// Before any OpenSSL header: the one way to load the error texts after a
// start that skipped them is marked deprecated in OpenSSL 3, not replaced.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "backend/net/openssl_setup.hpp"

#include <openssl/cryptoerr_legacy.h>
#include <openssl/err.h>
#include <openssl/sslerr_legacy.h>

#include <cstring>

namespace simba::backend::net {
namespace {

// What OpenSSL's own start-up would do by default and a lock does not
// need: read openssl.cnf (which may load engines and provider modules
// with dlopen), load every error text (~1 M instructions), register an
// atexit clean-up (simba ends with _exit), and fill the table of ciphers
// by their old names (~2.3 M): TLS fetches its ciphers from the provider,
// and only a key file in the old encrypted PEM format (DEK-Info) would look
// one up there, for which simba has no passphrase anyway. The digests'
// table stays: a certificate's signature is checked by its digest's old
// name (without it every chain is refused, "digest algorithm too weak").
constexpr uint64_t k_init = OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ATEXIT |
                            OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS |
                            OPENSSL_INIT_NO_LOAD_SSL_STRINGS | OPENSSL_INIT_NO_ADD_ALL_CIPHERS;

// The texts of the libraries a set-up or a handshake can fail in, for a
// message: skipped at start-up (k_init), and OpenSSL 3 has no public call
// that loads them all once skipped. Loaded once.
void load_texts() {
  static const bool loaded = [] {
    for (auto load : {ERR_load_ERR_strings, ERR_load_SSL_strings, ERR_load_X509_strings,
                      ERR_load_X509V3_strings, ERR_load_PEM_strings, ERR_load_ASN1_strings,
                      ERR_load_EVP_strings, ERR_load_BIO_strings, ERR_load_BUF_strings,
                      ERR_load_EC_strings, ERR_load_RSA_strings, ERR_load_OBJ_strings,
                      ERR_load_CRYPTO_strings, ERR_load_OSSL_STORE_strings})
      load();
    return true;
  }();
  (void)loaded;
}

} // namespace

SSL_CTX* new_client_context(std::string& error) {
  // Once; later calls only check that it was done. Without a configuration
  // file, OpenSSL's own library context has the default provider only (the
  // built-in one, activated on the first fetch): a context of simba's own
  // with that provider loaded measured 2.4 M instructions more, as parts
  // of a handshake fetch from the default context anyway.
  if (OPENSSL_init_ssl(k_init, nullptr) != 1) {
    error = "TLS: cannot set up OpenSSL: " + openssl_error();
    return nullptr;
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) error = "TLS: cannot set up: " + openssl_error();
  return ctx;
}

std::string openssl_error() {
  // The first is the cause ("No such file or directory"), the later ones
  // what failed because of it.
  unsigned long first = ERR_get_error();
  ERR_clear_error();
  if (first == 0) return "";
  // A system call's failure (OpenSSL 3's ERR_SYSTEM_FLAG, the top bit)
  // carries errno below it, and has no reason string of OpenSSL's own.
  constexpr unsigned long k_system_flag = 0x80000000ul;
  if (first & k_system_flag) return std::strerror(int(first & ~k_system_flag));
  load_texts();
  const char* reason = ERR_reason_error_string(first);
  return reason ? reason : "error " + std::to_string(first);
}

} // namespace simba::backend::net
