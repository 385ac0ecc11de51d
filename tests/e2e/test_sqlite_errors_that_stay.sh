#!/usr/bin/env bash
# SQLite errors that never go away — a simba_mutex table without its
# primary key, a read-only -wal file — made `run` and `lead` wait forever
# in silence, and --timeout exit 75 with no word. Now: one warning, then
# quiet back-off; --timeout exits 69 with SQLite's error.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/users.sh"

needs python3
need_users # part 2: root may write a read-only file anyway
simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

# 1. A table without its primary key (made by hand, or by another tool).
python3 - "$T/nopk.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("CREATE TABLE simba_mutex(mutex TEXT, owner_id TEXT NOT NULL, acquired_at INTEGER, "
          "ttl_at INTEGER, transition_at INTEGER, fencing_token INTEGER NOT NULL, boot_id TEXT, "
          "boot_acquired_at INTEGER, boot_ttl_at INTEGER, boot_transition_at INTEGER, boot_token INTEGER)")
c.commit()
PY
export SIMBA_BACKEND="sqlite:$T/nopk.db"
assert_exit 69 simba_bounded run --mutex m --timeout 2s -- touch "$T/ran"
grep -q "^simba: warning: backend failing while waiting for m: ON CONFLICT" "$T/err" || fail "no warning: $(cat -- "$T/err")"
grep -q "^simba: error: gave up waiting for m after 2s: backend unavailable: ON CONFLICT" "$T/err" ||
  fail "no error line: $(cat -- "$T/err")"
assert_eq 2 "$(wc -l <"$T/err")" "lines ($(cat -- "$T/err"))"
# lead, no --timeout: waits on, with the one warning only
"$SIMBA" lead --mutex m -- touch "$T/ran" 2>"$T/lead.err" &
lead=$!
sleep 4
pid_alive "$lead" || fail "lead ended: $(cat -- "$T/lead.err")"
assert_eq 1 "$(wc -l <"$T/lead.err")" "lines of lead in 4 s ($(cat -- "$T/lead.err"))"
kill -TERM "$lead"
wait "$lead" || true
[[ ! -e $T/ran ]] || fail "CMD ran"

# 2. A read-only -wal file (root may write anyway: as another user, who
# runs the copy of the binary in $T: users.sh).
user=$E2E_USER_C
dir=$T/ro
mkdir -p -- "$dir"
chown "$user" -- "$dir"
as_owner() { as_user "$user" env SIMBA_BACKEND="sqlite:$dir/simba.db" "$@"; }
as_owner "$SIMBA_ANY" run --mutex a -- sh -c 'touch "$0"; sleep 1' "$dir/holding" &
holder=$!
wait_file "$dir/holding" 10
chmod 444 -- "$dir/simba.db-wal"
wait "$holder" || true # its release may find the -wal read-only
[[ -e $dir/simba.db-wal ]] || fail "the -wal file went away when the holder ended: nothing to test"
assert_exit 69 as_owner timeout -k 5 30 "$SIMBA_ANY" run --mutex m --timeout 2s -- true
grep -Eq "^simba: error: gave up waiting for m after 2s: backend unavailable: .*(readonly|simba.db-wal for writing: permission denied)" "$T/err" ||
  fail "read-only -wal: $(cat -- "$T/err")"
assert_eq 2 "$(wc -l <"$T/err")" "read-only -wal: lines ($(cat -- "$T/err"))"
