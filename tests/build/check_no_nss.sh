#!/bin/sh
# simba is a static binary: glibc's name-service functions (getaddrinfo,
# gethostbyname, getpwuid, getpwnam, getgrgid...) would load the host's NSS
# modules, shared objects built for the system's libc, into it at run time
# (src/backend/net/resolve.hpp, src/backend/accounts.hpp say why that is
# avoided). Fails when the link map of the binary (the linker's -Map: which
# archive member came in, and for which symbol) shows any of them, or glibc's
# NSS machinery (nsswitch.o, nss_module.o) linked in for any reason. The
# binary itself is stripped: the map is what the linker saw.
#
# OpenSSL's archives reference getaddrinfo, getnameinfo and gethostbyname:
# src/no_libc_resolver.cpp takes glibc's place for them, failing, so the map
# cannot show simba's own code calling them: SIMBA_LIB (the archive of
# simba's code) is checked for such calls instead.
#
#   check_no_nss.sh BUILD/simba.map SIMBA_LIB
set -eu
map=$1 lib=$2
calls=$(nm -A -u "$lib" | grep -E " U (getaddrinfo|getnameinfo|gethostbyname[0-9a-z_]*)\$" || true)
if [ -n "$calls" ]; then
  echo "FAIL: simba's code calls glibc's resolver (use net/resolve.hpp or net/dial.hpp):" >&2
  printf '%s\n' "$calls" | sed 's/^/  /' >&2
  exit 1
fi
[ -s "$map" ] || { echo "FAIL: no link map at $map (build simba first)" >&2; exit 1; }
# "libc.a(getaddrinfo.o)" on one line, "   referrer (symbol)" on the next.
symbols='getaddrinfo|gethostbyname[0-9a-z_]*|gethostbyaddr[0-9a-z_]*|getpwuid[0-9a-z_]*|getpwnam[0-9a-z_]*|getgrgid[0-9a-z_]*|getgrnam[0-9a-z_]*|getservbyname[0-9a-z_]*|initgroups|getgrouplist'
bad=$(grep -E "\\(($symbols)\\)\$" "$map" || true)
nss=$(grep -oE 'libc\.a\((nsswitch|nss_module)\.o\)' "$map" | sort -u || true)
if [ -n "$bad$nss" ]; then
  echo "FAIL: the simba binary links glibc's name service (NSS):" >&2
  [ -z "$bad" ] || printf '%s\n' "$bad" | sed 's/^ */  referenced by /' >&2
  [ -z "$nss" ] || printf '  linked: %s\n' $nss >&2
  exit 1
fi
echo "ok: no name-service function and no NSS loader in $map"
