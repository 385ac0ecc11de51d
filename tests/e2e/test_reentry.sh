#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd mysql
# Re-entry is refused (DESIGN §6): a simba run inside a simba run for the same
# mutex exits 64 at once (instead of waiting forever) with a message about
# reentrancy; the outer simba passes that status through. A different mutex
# inside is fine.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

t0=$(now_ms)
assert_exit 64 simba_bounded run --mutex a -- "$SIMBA" run --mutex a -- touch "$T/inner-ran"
dt=$(($(now_ms) - t0))
((dt < 5000)) || fail "re-entry took ${dt} ms to be refused (expected at once)"
grep -qi 'reentr\|re-entr' "$T/err" || fail "no message about reentrancy: $(cat -- "$T/err")"
[[ $(grep -c '^simba: error: ' "$T/err") == 1 ]] ||
  fail "expected one 'simba: error:' line: $(cat -- "$T/err")"
[[ ! -e $T/inner-ran ]] || fail "the inner CMD ran"
assert_eq free "$(mutex_state a)" "mutex a afterwards"

# Deeper: a grandchild shell of the outer simba.
assert_exit 64 simba_bounded run --mutex a -- sh -c '"$0" run --mutex a -- true' "$SIMBA"
assert_eq free "$(mutex_state a)" "mutex a afterwards (nested through sh)"

# Another mutex inside is fine, and so is the same name on another backend.
assert_exit 0 simba_bounded run --mutex a -- "$SIMBA" run --mutex b -- true
assert_exit 0 simba_bounded run --mutex a -- "$SIMBA" run --mutex a --backend "sqlite:$T/other.db" -- true
# Sequential runs of the same mutex (not nested) are fine.
assert_exit 0 simba_bounded run --mutex a -- true
assert_exit 0 simba_bounded run --mutex a -- true
assert_eq free "$(mutex_state a)" "mutex a at the end"
assert_eq free "$(mutex_state b)" "mutex b at the end"
