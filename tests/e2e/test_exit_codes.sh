#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# Exit codes (DESIGN §6): CMD's own status passes through, a signal N becomes
# 128+N, 127/126 when CMD cannot be started, 75 when not acquired (or the
# --conflict-exit-code), 69 when the backend cannot be used. Errors print
# exactly one line "simba: error: ...".
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

# A bug that makes simba wait must fail this test quickly, not hang it.
simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

# one_error_line WHAT: $T/err holds exactly one line "simba: error: ...".
one_error_line() {
  local lines=()
  mapfile -t lines <"$T/err"
  if ((${#lines[@]} != 1)) || [[ ${lines[0]} != "simba: error: "* ]]; then
    printf -- '--- stderr:\n' >&2
    cat -- "$T/err" >&2
    fail "$1: expected exactly one line 'simba: error: ...' on stderr"
  fi
}

# CMD's own exit status.
assert_exit 0 simba_bounded run --mutex m -- true
assert_exit 3 simba_bounded run --mutex m -- sh -c 'exit 3'
assert_exit 42 simba_bounded run --mutex m -- sh -c 'exit 42'
assert_exit 1 simba_bounded run --mutex m -- false
# CMD killed by a signal: 128 + N.
assert_exit 143 simba_bounded run --mutex m -- sh -c 'kill -TERM $$'
assert_exit 137 simba_bounded run --mutex m -- sh -c 'kill -KILL $$'

# CMD cannot be started.
assert_exit 127 simba_bounded run --mutex m -- "$T/no-such-command"
one_error_line "command not found"
printf '#!/bin/sh\nexit 0\n' >"$T/not-executable"
chmod 0644 "$T/not-executable"
assert_exit 126 simba_bounded run --mutex m -- "$T/not-executable"
one_error_line "command not executable"
assert_eq free "$(mutex_state m)" "mutex m after the runs"

# Not acquired: another simba holds the mutex.
"$SIMBA" run --mutex m -- sh -c 'touch "$0"; exec sleep 60' "$T/holding" &
holder=$!
wait_file "$T/holding" 10
assert_exit 75 simba_bounded run --mutex m --no-wait -- true
assert_exit 0 simba_bounded run --mutex m --no-wait --conflict-exit-code 0 -- sh -c 'exit 5'
assert_exit 9 simba_bounded run --mutex m --no-wait --conflict-exit-code 9 -- true
assert_exit 9 simba_bounded run --mutex m --timeout 200ms --conflict-exit-code 9 -- true
kill -TERM "$holder"
rc=0
wait "$holder" || rc=$?
assert_eq 143 "$rc" "holder stopped by SIGTERM"

# Backend unavailable: 69, one error line, and CMD never runs.
# check_unavailable WHAT URI
check_unavailable() {
  local what=$1 uri=$2
  rm -f -- "$T/ran"
  assert_exit 69 simba_bounded run --mutex m --backend "$uri" -- touch "$T/ran"
  one_error_line "$what"
  [[ ! -e $T/ran ]] || fail "$what: CMD ran although the backend is unavailable"
}

# A file that is not a SQLite database.
for _ in {1..64}; do printf 'this is not a sqlite database, just junk bytes\n'; done >"$T/garbage.db"
check_unavailable "junk database file" "sqlite:$T/garbage.db"

# A network filesystem (the test hook makes the backend believe it is NFS).
SIMBA_TEST_FSTYPE=nfs check_unavailable "database on NFS" "sqlite:$T/nfs/simba.db"
grep -qi nfs "$T/err" || fail "the NFS error does not say NFS: $(cat -- "$T/err")"

# A directory that cannot be created: a path under a regular file (root
# ignores permission bits, so no chmod trick).
: >"$T/afile"
check_unavailable "database under a regular file" "sqlite:$T/afile/x.db"

# status on an unusable backend: 69 too.
assert_exit 69 simba_bounded status --backend "sqlite:$T/garbage.db"
one_error_line "status on a junk database file"
