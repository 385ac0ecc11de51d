// No glibc resolver in the static binary (resolve.hpp says why simba
// resolves host names itself). simba calls none of the functions below. OpenSSL,
// linked in for TLS, references them from its socket BIOs and
// BIO_lookup(), which simba never uses: TLS runs over memory BIOs on
// simba's own sockets (tls.cpp). Left to glibc's archive, those references
// would link its name service, and with it the loading of the host's NSS
// modules (shared objects of another glibc) into this process. These
// definitions take glibc's place and fail: a lookup through them says it
// is not supported. tests/build/check_no_nss.sh checks the link; the
// executable links this file itself (CMakeLists.txt says why).
#include <netdb.h>

#include <cerrno>

extern "C" {

int getaddrinfo(const char*, const char*, const addrinfo*, addrinfo** res) noexcept {
  *res = nullptr;
  errno = ENOSYS;
  return EAI_SYSTEM;
}

// Nothing to free: getaddrinfo() above returns no list.
void freeaddrinfo(addrinfo*) noexcept {}

int getnameinfo(const sockaddr*, socklen_t, char*, socklen_t, char*, socklen_t, int) noexcept {
  errno = ENOSYS;
  return EAI_SYSTEM;
}

hostent* gethostbyname(const char*) noexcept {
  h_errno = NO_RECOVERY;
  return nullptr;
}

} // extern "C"
