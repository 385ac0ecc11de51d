#!/usr/bin/env bash
# No passwd entry and no HOME (issue 36 §10): simba crashed (139) in the
# static binary's getpwuid(). Now the default location is one clear error,
# exit 64, for run and status; a relative HOME (which would follow the
# working directory) is refused the same way; SIMBA_HOME still works.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
((EUID == 0)) || skip "needs root (setpriv to a uid without a passwd entry)"
command -v setpriv >/dev/null 2>&1 || skip "setpriv is not installed (package util-linux)"
uid=4242
while getent passwd "$uid" >/dev/null || grep -q "^[^:]*:[^:]*:$uid:" /etc/passwd; do uid=$((uid + 1)); done
chmod 755 -- "$T"
# The uid cannot reach the build tree (a checkout under /root, mode 0700, on
# Debian): it runs a copy in the test's directory.
source "$(dirname -- "${BASH_SOURCE[0]}")/users.sh"
_e2e_reachable_by_all "$T" ||
  skip "other users cannot reach the test's directory $T (a parent is not searchable by all): set TMPDIR to one they can"
mkdir -m 755 -- "$T/bin"
simba_any=$(copy_for_users "$SIMBA")
nobody() { setpriv --reuid "$uid" --regid "$uid" --clear-groups env -u HOME -u SIMBA_HOME \
  -u XDG_STATE_HOME -u SIMBA_BACKEND "$@"; }

for cmd in "run --mutex r -- echo ran" "status"; do
  # shellcheck disable=SC2086 # the words of the command
  assert_exit 64 nobody "$simba_any" $cmd
  assert_eq 1 "$(wc -l <"$T/err")" "one line on stderr for '$cmd': $(cat -- "$T/err")"
  grep -q "^simba: error: cannot find the default database: HOME is not set and uid $uid has no home" \
    "$T/err" || fail "no clear error for '$cmd': $(cat -- "$T/err")"
  [[ ! -s $T/out ]] || fail "CMD ran for '$cmd': $(cat -- "$T/out")"
done

# A relative HOME: refused, and nothing made under the working directory.
mkdir -- "$T/cwd"
(cd "$T/cwd" && assert_exit 64 env -u SIMBA_HOME -u XDG_STATE_HOME -u SIMBA_BACKEND HOME=rel \
  "$SIMBA" run --mutex r -- echo ran)
grep -q "HOME is not an absolute path ('rel')" "$T/err" || fail "no reason: $(cat -- "$T/err")"
[[ -z $(ls -A -- "$T/cwd") ]] || fail "made under the working directory: $(ls -A -- "$T/cwd")"

# SIMBA_HOME needs no home at all.
mkdir -m 1777 -- "$T/db"
assert_exit 0 nobody SIMBA_HOME="$T/db" "$simba_any" run --mutex r -- echo ran
assert_eq ran "$(cat -- "$T/out")" "CMD's output with SIMBA_HOME"
