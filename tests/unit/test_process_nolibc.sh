#!/bin/sh
# The code of src/process/nolibc/ runs inside the watchdog, which shares
# simba's memory: a call into libc there (memcpy, strlen, getpid, malloc, a
# stack-protector or exception handler the compiler brings in) is not safe
# (see src/process/nolibc/syscalls.hpp). Fails when the objects of that
# folder, taken together, need any symbol they do not define, but the one
# allowed: clone (watchdog_main.cpp says why).
#
#   test_process_nolibc.sh 'OBJ1|OBJ2|...'    (ctest passes them, '|'-joined)
set -eu
allowed='clone'
objects=$(printf '%s\n' "$1" | tr '|' '\n')
[ -n "$objects" ] || { echo "FAIL: no object given" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' "$objects" | while IFS= read -r o; do
  [ -f "$o" ] || { echo "FAIL: no such object: $o" >&2; exit 1; }
  nm -u "$o" | awk '{print $NF}' >>"$tmp/undefined"
  nm --defined-only "$o" | awk '{print $NF}' >>"$tmp/defined"
done
sort -u "$tmp/undefined" >"$tmp/u"
sort -u "$tmp/defined" >"$tmp/d"
printf '%s\n' $allowed | sort -u >"$tmp/a"
missing=$(comm -23 "$tmp/u" "$tmp/d" | comm -23 - "$tmp/a")
if [ -n "$missing" ]; then
  echo "FAIL: the watchdog's code (src/process/nolibc) calls functions it does not define:" >&2
  printf '  %s\n' $missing >&2
  exit 1
fi
echo "ok: $(printf '%s\n' "$objects" | wc -l) objects, no call outside them but: $allowed"
