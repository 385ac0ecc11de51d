#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# One database shared by several Unix users (issue 13 §3, §4), with real
# users: the recipe of docs/backends/sqlite.md (a group, a setgid directory) works for every
# member, hand-overs between users are prompt (the notification works
# across users), what simba makes keeps the directory's group and the
# database's permissions; a permission problem says "permission denied" and
# names the file; a waiter that cannot use the notification warns once; a
# user who may only read the database gets its status. SQLite only; root.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/users.sh"
need_users
needs jq sqlite3
A=$E2E_USER_A B=$E2E_USER_B C=$E2E_USER_C
gid=$(gid_of "$E2E_GROUP")
M=$T/marks # where the users' CMDs leave marks
mkdir -m 1777 "$M"

# --- the recipe: a group and a setgid directory --------------------------------
shared=$T/shared
mkdir -m 2770 "$shared"
chgrp "$E2E_GROUP" "$shared"
chmod 2770 "$shared"
export SIMBA_BACKEND=sqlite:$shared/simba.db

assert_exit 0 as_user "$A" "$SIMBA_ANY" run --mutex m -- true
assert_eq "660 $gid" "$(stat -c '%a %g' "$shared/simba.db")" "a new database in a shared directory"
for f in "$shared/simba.db-wal" "$shared/simba.db-shm"; do
  assert_eq "660 $gid" "$(stat -c '%a %g' "$f")" "mode and group of $f"
done
assert_exit 0 as_user "$B" "$SIMBA_ANY" run --mutex m -- true
[[ ! -s $T/err ]] || fail "the second user's run said something: $(<"$T/err")"

# A hand-over from A to B, then B to A: each waiter is woken by the other
# user's release at once (no notification: it would wait out the lease, 20 s).
handover() { # handover HOLDER WAITER
  rm -f -- "$M/held" "$M/woke"
  as_user "$1" "$SIMBA_ANY" run --mutex h --ttl 20s -- sh -c 'touch "$0"; sleep 1' "$M/held" &
  local holder=$!
  wait_for 10 test -e "$M/held"
  as_user "$2" "$SIMBA_ANY" run --mutex h --ttl 20s -- sh -c 'date +%s%3N >"$0"' "$M/woke" \
    2>"$T/waiter.err" &
  local waiter=$!
  local t0
  wait "$holder" || fail "the holder ($1) failed"
  t0=$(now_ms)
  wait "$waiter" || fail "the waiter ($2) failed: $(<"$T/waiter.err")"
  local dt=$(($(<"$M/woke") - t0))
  echo "hand-over $1 -> $2: ${dt} ms" >&2
  ((dt < 2000)) || fail "hand-over from $1 to $2 took ${dt} ms: the release notification did not reach $2"
  # Only the waiting notice; no warning (about the release notification).
  ! grep -q -e warning -e error "$T/waiter.err" || fail "the waiter $2 said: $(<"$T/waiter.err")"
}
handover "$A" "$B"
handover "$B" "$A"
# The notification directory and its files: the database's permissions and
# the directory's group (a file per mutex, made by whoever came first).
assert_eq "2770 $gid" "$(stat -c '%a %g' "$shared/simba.db.notify")" "the notification directory"
n=0
for f in "$shared/simba.db.notify"/*; do
  assert_eq "660 $gid" "$(stat -c '%a %g' "$f")" "mode and group of $f"
  n=$((n + 1))
done
((n > 0)) || fail "no file in the notification directory"
# Root's simba follows the same rules (root is no member: it may use the
# database, which it owns no less than anyone, only as a member).
assert_exit 69 "$SIMBA" run --mutex m -- true
grep -q "refusing the database directory $shared: its group" "$T/err" || fail "root: $(<"$T/err")"
# A read-only status too, and the line says how root gets it: as a member
# (issue 32 §1), which the hint's command then does.
assert_exit 69 "$SIMBA" status --mutex m
grep -q "run simba as a member, e.g. sg $E2E_GROUP -c 'simba status ...'" "$T/err" ||
  fail "root's status refusal names no way: $(<"$T/err")"
if command -v sg >/dev/null 2>&1; then
  assert_exit 0 sg "$E2E_GROUP" -c "$(printf '%q ' "$SIMBA" status --mutex m)"
  grep -q "^m " "$T/out" || fail "root's status as a member: $(<"$T/out")"
fi

# --- a user outside the group ---------------------------------------------------
assert_exit 69 as_user "$C" "$SIMBA_ANY" run --mutex m -- true
grep -q "$shared" "$T/err" || fail "the error does not name the directory: $(<"$T/err")"

# --- permission denied, named --------------------------------------------------
# A database made private to A (as simba before it shared did): B is told.
chmod 600 "$shared/simba.db"
assert_exit 69 as_user "$B" "$SIMBA_ANY" run --mutex m -- true
[[ $(wc -l <"$T/err") == 1 ]] || fail "more than one line: $(<"$T/err")"
grep -q "cannot open $shared/simba.db: permission denied" "$T/err" || fail "B got: $(<"$T/err")"
chmod 660 "$shared/simba.db"
chmod 600 "$shared/simba.db-shm"
assert_exit 69 as_user "$B" "$SIMBA_ANY" run --mutex m -- true
grep -q "$shared/simba.db-shm: permission denied" "$T/err" || fail "B got: $(<"$T/err")"
chmod 660 "$shared/simba.db-shm"

# --- a waiter that cannot use the notification warns once ----------------------
chown "$A" "$shared/simba.db.notify"
chmod 2700 "$shared/simba.db.notify" # private to A, as a simba before this one made it
as_user "$A" "$SIMBA_ANY" run --mutex w --ttl 20s -- sh -c 'touch "$0"; sleep 3' "$M/held2" &
holder=$!
wait_for 10 test -e "$M/held2"
assert_exit 75 as_user "$B" "$SIMBA_ANY" run --mutex w --timeout 1500ms -- true
n=$(grep -c "warning: cannot use the release notification" "$T/err" || true)
assert_eq 1 "$n" "warnings of the waiter without notification ($(<"$T/err"))"
grep "warning: cannot use the release notification" "$T/err" | grep -q "permission denied" ||
  fail "the warning does not say why: $(<"$T/err")"
grep -q "hand-overs will be slow" "$T/err" || fail "the warning does not say what it costs: $(<"$T/err")"
assert_exit 75 as_user "$B" "$SIMBA_ANY" run -q --mutex w --timeout 500ms -- true
[[ ! -s $T/err ]] || fail "-q still warned: $(<"$T/err")"
wait "$holder"
chmod 2770 "$shared/simba.db.notify"

# --- status by a user who may only read the database ---------------------------
ro=$T/ro
mkdir -m 755 "$ro"
"$SIMBA" run --backend "sqlite:$ro/simba.db" --mutex r --contender-id rootjob -- \
  sh -c 'touch "$0"; sleep 30' "$T/held3" &
holder=$!
wait_for 10 test -e "$T/held3"
chmod 644 "$ro"/simba.db*
# With a writer at work (its -shm in use).
assert_exit 0 as_user "$B" "$SIMBA_ANY" status --backend "sqlite:$ro/simba.db" --mutex r --json
[[ $(jq -r '.mutexes[0].label' "$T/out") == rootjob ]] || fail "status as B: $(cat "$T/out" "$T/err")"
assert_exit 0 as_user "$B" "$SIMBA_ANY" status -q --backend "sqlite:$ro/simba.db"
# B may not write: run and release say so, and change nothing.
assert_exit 69 as_user "$B" "$SIMBA_ANY" run --backend "sqlite:$ro/simba.db" --mutex r2 -- true
grep -q "cannot open $ro/simba.db for writing: permission denied" "$T/err" || fail "B's run: $(<"$T/err")"
assert_exit 69 as_user "$B" "$SIMBA_ANY" release --force --backend "sqlite:$ro/simba.db" --mutex r
grep -q "$ro/simba.db for writing: permission denied" "$T/err" || fail "B's release: $(<"$T/err")"
assert_eq held "$(SIMBA_BACKEND=sqlite:$ro/simba.db mutex_state r)" "r after B's release"
kill -TERM "$holder"
wait "$holder" || true
# Without -wal and -shm files (a sqlite3 shell that closed the database last
# removes them), which B cannot make in the directory.
sqlite3 "$ro/simba.db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
[[ ! -e $ro/simba.db-shm ]] || fail "the -shm file is still there"
assert_exit 0 as_user "$B" "$SIMBA_ANY" status --all --backend "sqlite:$ro/simba.db" --json
jq -e '.mutexes | map(.mutex) | index("r") != null' "$T/out" >/dev/null ||
  fail "status as B without -shm: $(cat "$T/out" "$T/err")"
[[ ! -e $ro/simba.db-shm && ! -e $ro/simba.db-wal ]] || fail "B's status made files"
