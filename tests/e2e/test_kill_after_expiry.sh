#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# When renewals fail (here: another process holds the SQLite database's write
# lock, so every guard times out), simba stops CMD before the lease can
# expire -- TERM at deadline - kill_after, KILL at the deadline (DESIGN §4) --
# and exits 76.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

needs sqlite3
db=$T/simba.db # SIMBA_BACKEND from common.sh

"$SIMBA" run --mutex m --ttl 1s --transition 1s -- \
  sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$T/child.pid" &
holder=$!
wait_for 10 test -s "$T/child.pid"
child=$(<"$T/child.pid")
assert_eq held "$(mutex_state m)" "state before the database is locked"

# db_locked: a write transaction cannot start at once.
db_locked() {
  ! sqlite3 -cmd '.timeout 0' "$db" 'BEGIN IMMEDIATE; ROLLBACK;' >/dev/null 2>&1
}
# The blocker holds the write lock for 10 s (far past ttl + transition).
# Its BEGIN waits for simba's commit (a renewal) should one be under way.
(echo 'BEGIN IMMEDIATE;'; sleep 10) | sqlite3 -cmd '.timeout 5000' "$db" &
blocker=$!
wait_for 5 db_locked
t0=$(now_ms)

# The last renewal happened before t0: CMD must be gone within
# ttl + transition of it (plus slack for a loaded machine).
wait_for 2.5 pid_dead "$child"
echo "CMD stopped $(($(now_ms) - t0)) ms after the database was locked" >&2
# simba itself exits 76 (it may wait for its release attempt to time out).
wait_for 15 pid_dead "$holder"
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of simba after failed renewals"

# Once the lock is gone, the expired lease leaves the mutex free.
# $! of a pipeline is its last process; the job's group is the first one's.
pgid=$(ps -o pgid= -p "$blocker" | tr -d ' ') || true
[[ -n $pgid ]] && { kill -TERM -- "-$pgid" 2>/dev/null || true; }
wait "$blocker" 2>/dev/null || true
is_free() { [[ $(mutex_state m) == free ]]; }
wait_for 5 is_free
