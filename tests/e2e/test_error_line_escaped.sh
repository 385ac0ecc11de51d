#!/usr/bin/env bash
# Errors echo what was given (issue 36, "Doubtful"): control characters in
# --ttl or --backend reached the terminal raw (an escape sequence, a tab),
# and a 100 KB --backend made a 100 KB error. The error line is one line,
# control characters as \xNN, at most about 4 KiB (its start and end kept).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
unset SIMBA_BACKEND
assert_exit 64 "$SIMBA" run --mutex m --ttl "$(printf 'a\033[31mred\tb')" -- true
assert_eq 1 "$(wc -l <"$T/err")" "lines"
grep -q 'a\\x1b\[31mred\\x09b' "$T/err" || fail "not escaped: $(cat -A -- "$T/err")"
! grep -q "$(printf '\033')" "$T/err" || fail "an ESC reached stderr"
long=$(head -c 100000 /dev/zero | tr '\0' x)
rc=0
"$SIMBA" run --mutex m --backend "bogus://$long" -- true 2>"$T/err" || rc=$?
assert_eq 64 "$rc" "exit for a 100 KB URI ($(head -c 200 "$T/err"))"
size=$(wc -c <"$T/err")
((size < 5000)) || fail "a ${size}-byte error line"
grep -q 'bytes \.\.\.\]' "$T/err" || fail "no mark of the cut: $(head -c 300 "$T/err")"
