#!/usr/bin/env bash
# man/simba.1: groff finds nothing to warn about (-ww), and the page
# documents every command; for each command exactly the options its --help
# declares, each with an entry of its own; every backend's scheme (and so
# does --help of --backend); the environment variables and the exit codes.
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

# Options, both ways, per command. The page's "Options by command" lists
# what each command takes; it must be exactly what that command's --help
# declares (its option column), so that an option added to the code without
# the page, or left on the page after it went, fails here. And every option
# must have its own entry (a .TP tag) under OPTIONS, and every tag there an
# option that some --help declares.
help_options() { # CMD... : the long options its --help declares
  "$SIMBA" "$@" --help | sed -nE 's/^  (-[a-zA-Z],)?(--[a-z][a-z-]*).*/\2/p' | sort -u
}
man_options() { # CMD : the options "Options by command" lists for it
  awk -v cmd="$1" '
    /^\.S[SH] / { in_list = ($0 == ".SS Options by command"); next }
    !in_list { next }
    /^\.TP/ { grab = 0; next }
    /^\.B / { grab = ($2 == cmd); next }
    grab { print }' "$page" | sed 's/\\-/-/g' | grep -oE -- '--[a-z][a-z-]*' | sort -u
}
# The options with an entry of their own: the tag line after each .TP in OPTIONS.
awk '/^\.SH / { in_opts = ($2 == "OPTIONS"); next }
     in_opts && tag { print; tag = 0; next }
     in_opts && /^\.TP/ { tag = 1 }' "$page" | sed 's/\\-/-/g' |
  grep -oE -- '--[a-z][a-z-]*' | sort -u >"$T/tagged"
[[ -s $T/tagged ]] || fail "no option entries found under OPTIONS"
: >"$T/all_help"
for sub in simba run lead schedule status release acquire renew history doctor; do
  args=("$sub")
  [[ $sub == simba ]] && args=()
  [[ $sub == simba ]] || documented "simba $sub" || fail "the man page does not show 'simba $sub'"
  help_options "${args[@]}" >"$T/help.$sub" || fail "simba ${args[*]} --help failed"
  [[ -s $T/help.$sub ]] || fail "no options found in simba ${args[*]} --help"
  man_options "$sub" >"$T/man.$sub"
  [[ -s $T/man.$sub ]] || fail "the man page's \"Options by command\" has no list for $sub"
  missing=$(comm -23 "$T/help.$sub" "$T/man.$sub" | tr '\n' ' ' | sed 's/ $//')
  [[ -z $missing ]] ||
    fail "simba $sub --help has $missing but the man page's \"Options by command\" does not list it for $sub"
  extra=$(comm -13 "$T/help.$sub" "$T/man.$sub" | tr '\n' ' ' | sed 's/ $//')
  [[ -z $extra ]] ||
    fail "the man page lists $extra for $sub, but simba $sub --help has no such option"
  untagged=$(comm -23 "$T/help.$sub" "$T/tagged" | tr '\n' ' ' | sed 's/ $//')
  [[ -z $untagged ]] || fail "the man page has no entry under OPTIONS for $untagged (of simba $sub)"
  cat "$T/help.$sub" >>"$T/all_help"
done
sort -u -o "$T/all_help" "$T/all_help"
gone=$(comm -13 "$T/all_help" "$T/tagged" | tr '\n' ' ' | sed 's/ $//')
[[ -z $gone ]] || fail "the man page describes $gone under OPTIONS, but no command's --help has it"

# Every backend's scheme (src/backend/uri*.cpp; the rediss+ variants and
# postgresql:, another spelling, aside) is named by --backend's help and by
# DESCRIPTION.
mapfile -t schemes < <(grep -ohE '"[a-z+]+:(//)?"' "$_e2e_root"/src/backend/uri*.cpp |
  tr -d '"' | sed 's#//$##' | grep -vE '^(rediss\+|postgresql:)' | sort -u)
((${#schemes[@]} >= 7)) || fail "found only ${#schemes[@]} URI schemes in src/backend/uri*.cpp: ${schemes[*]}"
"$SIMBA" run --help | grep -A1 -- '^  --backend' >"$T/backend_help"
sed -n '/^DESCRIPTION/,/^ *Leases/p' "$T/page.txt" | tr -s ' \n' ' ' >"$T/description"
for scheme in "${schemes[@]}"; do
  grep -qF -- "$scheme" "$T/backend_help" || fail "simba run --help's --backend does not name $scheme"
  grep -qF -- "$scheme" "$T/description" || fail "the man page's DESCRIPTION does not name $scheme"
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
