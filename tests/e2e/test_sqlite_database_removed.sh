#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# The database is removed under a holder (`rm -rf $SIMBA_HOME`): the holder
# notices that the file at its path is no longer the one it has open and
# treats it as a lost lease (CMD stopped, exit 76) instead of renewing the
# unlinked file while new processes use a new one. A waiter opens the path
# again, as a new process would, but does not take the mutex before the
# lease it was waiting for would have ended: its CMD never overlaps the
# holder's. SQLite only.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

export SIMBA_BACKEND="sqlite:$T/state/simba.db"
mkdir -m 700 "$T/state"

# alive PID: running and not a zombie (for the waiter's CMD)
cat >"$T/alive.sh" <<'SH'
pid=$(cat "$1") || exit 1
[ -r "/proc/$pid/stat" ] || exit 1
state=$(sed 's/^.*) //' "/proc/$pid/stat" | cut -c1)
[ "$state" != Z ]
SH

# --- rm -rf of the whole directory, with a waiter -----------------------------
# The holder's CMD ignores SIGTERM: it runs on until the SIGKILL that
# follows after --kill-after (500 ms), which a waiter must wait out.
"$SIMBA" run --mutex m --ttl 2s --transition 1s -- \
  sh -c 'trap "" TERM; echo $$ >"$0"; sleep 60' "$T/a.pid" &
holder=$!
wait_for 10 test -s "$T/a.pid"
token_a=$(mutex_field m fencing_token)

"$SIMBA" run --mutex m --ttl 2s --transition 1s -- \
  sh -c 'if sh "$1" "$2"; then echo overlap; else echo alone; fi >"$0"; echo "$SIMBA_FENCING_TOKEN" >>"$0"' \
  "$T/w.out" "$T/alive.sh" "$T/a.pid" &
waiter=$!
sleep 0.5 # the waiter queued, the holder's CMD ran long enough to watch
[[ ! -e $T/w.out ]] || fail "the waiter ran while A held the mutex"

t0=$(now_ms)
# The simbas may make their files again while rm works: try again.
tries=0
until rm -rf -- "$T/state" 2>/dev/null; do
  ((++tries < 100)) || fail "could not remove $T/state"
  sleep 0.01
done
wait_for 5 pid_dead "$(<"$T/a.pid")"
wait_for 5 pid_dead "$holder"
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of the holder whose database was removed"
echo "holder stopped $(($(now_ms) - t0)) ms after the database was removed" >&2

rc=0
timeout -k 5 20 tail --pid="$waiter" -f /dev/null || true
wait "$waiter" || rc=$?
assert_eq 0 "$rc" "exit status of the waiter"
assert_eq alone "$(head -n1 "$T/w.out")" "the waiter's CMD ran while the holder's CMD still ran"
token_w=$(sed -n 2p "$T/w.out")
((token_w > token_a)) || fail "the waiter's token $token_w is not above the holder's $token_a"
[[ -s $T/state/simba.db ]] || fail "the waiter did not open the database anew"
assert_eq "$token_w" "$(mutex_field m fencing_token)" "the new database's token"

# --- only the database files go; the holder learns at its next guard ---------
rm -f -- "$T/a.pid"
"$SIMBA" run --mutex m --ttl 2s --transition 1s -- \
  sh -c 'echo $$ >"$0"; exec sleep 60' "$T/a.pid" &
holder=$!
wait_for 10 test -s "$T/a.pid"
sleep 0.5 # past the holder's first look at the mutex
t0=$(now_ms)
rm -f -- "$T/state/simba.db" "$T/state/simba.db-wal" "$T/state/simba.db-shm"
wait_for 5 pid_dead "$(<"$T/a.pid")"
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of the holder whose database file was removed"
dt=$(($(now_ms) - t0))
echo "holder stopped ${dt} ms after the database file was removed" >&2
((dt < 3500)) || fail "the holder took ${dt} ms to notice (ttl 2 s)"
