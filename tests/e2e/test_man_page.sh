#!/usr/bin/env bash
# man/simba.1: groff finds nothing to warn about (-ww), and the page
# documents every command, every option each command's --help lists, the
# environment variables and the exit codes.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

page=$_e2e_root/man/simba.1
[[ -f $page ]] || fail "no man page at $page"
needs groff

groff -ww -man -z "$page" >"$T/groff.out" 2>&1 || fail "groff failed: $(cat -- "$T/groff.out")"
[[ ! -s $T/groff.out ]] || fail "groff warns about $page: $(cat -- "$T/groff.out")"

# The rendered text, hyphenation and adjustment off, so that names are whole.
groff -man -Tutf8 -P-cbou -rHY=0 -dAD=l "$page" 2>/dev/null >"$T/page.txt" ||
  fail "groff cannot render $page"
# groff may render '-' as U+2010 or U+2212: back to ASCII
sed -i 's/\xe2\x80\x90/-/g; s/\xe2\x88\x92/-/g' "$T/page.txt"
documented() { grep -qF -- "$1" "$T/page.txt"; }

for sub in run lead schedule status release acquire renew history; do
  documented "simba $sub" || fail "the man page does not show 'simba $sub'"
  "$SIMBA" "$sub" --help >"$T/help" || fail "simba $sub --help failed"
  for opt in $(grep -o -- '--[a-z][a-z-]*' "$T/help" | sort -u); do
    documented "$opt" || fail "the man page does not document $opt (of simba $sub)"
  done
done
for word in --version SIMBA_MUTEX SIMBA_BACKEND SIMBA_HOME XDG_STATE_HOME \
  SIMBA_REDIS_PASSWORD SIMBA_CONTENDER_ID SIMBA_OWNER_ID SIMBA_FENCING_TOKEN SIMBA_ACQUIRED_AT \
  SIMBA_TTL_MS SIMBA_TRANSITION_MS SIMBA_HELD sqlite:/// redis:// redis+unix:// \
  fixed-rate fixed-delay on-failure EXIT STATUS SAFETY EXAMPLES; do
  documented "$word" || fail "the man page does not mention $word"
done
for code in 64 69 75 76 125 126; do
  grep -qE "^ +$code( |,|$)" "$T/page.txt" || fail "the man page does not list exit code $code"
done
grep -qE '^ +126, 127' "$T/page.txt" || fail "the man page does not list exit code 127"
