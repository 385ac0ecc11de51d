#!/usr/bin/env bash
# A typo must not make a lock namespace of its own (issue 13 §3): only the
# default location ($SIMBA_HOME, or the XDG state directory) is made when
# missing; a --backend path whose directory does not exist is exit 69 with
# one line naming it; status and release never create anything (a missing
# database is 69, "no simba database at ..."). SQLite only.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

# one_line NEEDLE: stderr is one line, "simba: error: ...", holding NEEDLE
one_line() {
  local err
  err=$(<"$T/err")
  [[ $(wc -l <"$T/err") == 1 ]] || fail "expected one line on stderr, got: $err"
  [[ $err == "simba: error: "* ]] || fail "not an error line: $err"
  [[ $err == *"$1"* ]] || fail "the error does not say [$1]: $err"
}

# --- an explicit path in a directory that does not exist ----------------------
typo=$T/nonexistent/dir
assert_exit 69 "$SIMBA" run --backend "sqlite://$typo/x.db" --mutex m -- touch "$T/ran"
one_line "$typo"
[[ ! -e $T/nonexistent ]] || fail "run made the directory $T/nonexistent"
[[ ! -e $T/ran ]] || fail "CMD ran without a database"
for cmd in lead schedule; do
  extra=()
  [[ $cmd == schedule ]] && extra=(--every 1h)
  assert_exit 69 "$SIMBA" "$cmd" --backend "sqlite:$typo/x.db" --mutex m "${extra[@]}" -- touch "$T/ran"
  one_line "$typo"
done
[[ ! -e $T/nonexistent ]] || fail "lead or schedule made the directory"

# --- status and release create nothing ----------------------------------------
assert_exit 69 "$SIMBA" status -q --backend "sqlite://$T/typo/simba.db"
one_line "no simba database at $T/typo/simba.db"
[[ ! -e $T/typo ]] || fail "status made $T/typo"
mkdir "$T/empty"
assert_exit 69 "$SIMBA" status --backend "sqlite:$T/empty/simba.db"
one_line "no simba database at $T/empty/simba.db"
assert_exit 69 "$SIMBA" status --mutex m --json --backend "sqlite:$T/empty/simba.db"
assert_exit 69 "$SIMBA" release --force --mutex m --backend "sqlite:$T/empty/simba.db"
one_line "no simba database at $T/empty/simba.db"
assert_eq "" "$(ls -A -- "$T/empty")" "files status or release made"
# The default location, missing: not made by status either.
assert_exit 69 "$SIMBA" status --backend ''
one_line "no simba database at $SIMBA_HOME/simba.db"
[[ ! -e $SIMBA_HOME ]] || fail "status made the default location $SIMBA_HOME"

# --- an explicit path in an existing directory: the file is made --------------
assert_exit 0 "$SIMBA" run --backend "sqlite:$T/empty/simba.db" --mutex m -- true
[[ -s $T/empty/simba.db ]] || fail "run did not make the database in an existing directory"
assert_exit 0 "$SIMBA" status --backend "sqlite:$T/empty/simba.db"
assert_exit 0 "$SIMBA" release --force --mutex m --backend "sqlite:$T/empty/simba.db"

# --- the default location is made, private -------------------------------------
export SIMBA_HOME=$T/home/deep/er
assert_exit 0 "$SIMBA" run --backend '' --mutex m -- true
[[ -s $SIMBA_HOME/simba.db ]] || fail "the default location was not made"
assert_eq 700 "$(stat -c %a "$T/home/deep/er")" "mode of the default directory"
assert_eq 600 "$(stat -c %a "$SIMBA_HOME/simba.db")" "mode of a new database"
unset SIMBA_HOME
export XDG_STATE_HOME=$T/xdg
assert_exit 0 "$SIMBA" run --backend '' --mutex m -- true
[[ -s $T/xdg/simba/simba.db ]] || fail "the XDG default location was not made"
assert_exit 1 "$SIMBA" status -q --backend "" --mutex m # free: 1, and no error
