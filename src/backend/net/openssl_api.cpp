// OpenSSL loaded on first use (openssl_api.hpp).
#include "backend/net/openssl_api.hpp"

#include <dlfcn.h>

#include <cstring>

namespace simba::backend::net {
namespace {

// Debian's package of both libraries, named in the error.
constexpr const char* k_package = "libssl3";

template <typename Fn> bool find(void* lib, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn && missing.empty()) missing = name;
  return fn != nullptr;
}

std::string load(OpenSslApi& a) {
  // libcrypto first: libssl needs it, and two of its functions are ours.
  void* crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
  void* ssl = crypto ? dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (!ssl) {
    const char* why = dlerror();
    return std::string("TLS needs OpenSSL 3 (") + (why ? why : "libssl.so.3 not found") +
           "): install the package " + k_package;
  }
  std::string missing;
#define SIMBA_FIND(lib, name) find(lib, #name, a.name, missing)
  SIMBA_FIND(ssl, TLS_client_method);
  SIMBA_FIND(ssl, SSL_CTX_new);
  SIMBA_FIND(ssl, SSL_CTX_free);
  SIMBA_FIND(ssl, SSL_CTX_ctrl);
  SIMBA_FIND(ssl, SSL_CTX_set_options);
  SIMBA_FIND(ssl, SSL_CTX_set_verify);
  SIMBA_FIND(ssl, SSL_CTX_set_default_verify_paths);
  SIMBA_FIND(ssl, SSL_CTX_load_verify_locations);
  SIMBA_FIND(ssl, SSL_CTX_use_certificate_chain_file);
  SIMBA_FIND(ssl, SSL_CTX_use_PrivateKey_file);
  SIMBA_FIND(ssl, SSL_CTX_check_private_key);
  SIMBA_FIND(ssl, SSL_CTX_set_client_cert_cb);
  SIMBA_FIND(ssl, SSL_set_ex_data);
  SIMBA_FIND(ssl, SSL_get_ex_data);
  SIMBA_FIND(ssl, SSL_new);
  SIMBA_FIND(ssl, SSL_free);
  SIMBA_FIND(ssl, SSL_ctrl);
  SIMBA_FIND(ssl, SSL_set_bio);
  SIMBA_FIND(ssl, SSL_set_connect_state);
  SIMBA_FIND(ssl, SSL_set1_host);
  SIMBA_FIND(ssl, SSL_get0_param);
  SIMBA_FIND(ssl, SSL_do_handshake);
  SIMBA_FIND(ssl, SSL_read);
  SIMBA_FIND(ssl, SSL_write);
  SIMBA_FIND(ssl, SSL_get_error);
  SIMBA_FIND(ssl, SSL_get_verify_result);
  SIMBA_FIND(ssl, SSL_get1_peer_certificate);
  SIMBA_FIND(crypto, BIO_new);
  SIMBA_FIND(crypto, BIO_s_mem);
  SIMBA_FIND(crypto, BIO_read);
  SIMBA_FIND(crypto, BIO_write);
  SIMBA_FIND(crypto, BIO_ctrl_pending);
  SIMBA_FIND(crypto, ERR_get_error);
  SIMBA_FIND(crypto, ERR_clear_error);
  SIMBA_FIND(crypto, ERR_reason_error_string);
  SIMBA_FIND(crypto, X509_verify_cert_error_string);
  SIMBA_FIND(crypto, X509_VERIFY_PARAM_set1_ip_asc);
  SIMBA_FIND(crypto, X509_get_default_cert_dir);
  SIMBA_FIND(crypto, X509_get_default_cert_dir_env);
  SIMBA_FIND(crypto, X509_get_default_cert_file_env);
  SIMBA_FIND(crypto, X509_get0_notAfter);
  SIMBA_FIND(crypto, X509_free);
  SIMBA_FIND(crypto, ASN1_TIME_to_tm);
#undef SIMBA_FIND
  if (!missing.empty())
    return "TLS needs OpenSSL 3, and the libssl.so.3 found lacks " + missing +
           ": install the package " + k_package;
  return "";
}

} // namespace

const OpenSslApi* openssl(std::string& error) {
  static OpenSslApi api;
  static std::string load_error = load(api);
  error = load_error;
  return load_error.empty() ? &api : nullptr;
}

std::string openssl_error(const OpenSslApi& api) {
  // The first is the cause ("No such file or directory"), the later ones
  // what failed because of it.
  unsigned long first = api.ERR_get_error();
  api.ERR_clear_error();
  if (first == 0) return "";
  // A system call's failure (OpenSSL 3's ERR_SYSTEM_FLAG, the top bit)
  // carries errno below it, and has no reason string of OpenSSL's own.
  constexpr unsigned long k_system_flag = 0x80000000ul;
  if (first & k_system_flag) return std::strerror(int(first & ~k_system_flag));
  const char* reason = api.ERR_reason_error_string(first);
  return reason ? reason : "error " + std::to_string(first);
}

} // namespace simba::backend::net
