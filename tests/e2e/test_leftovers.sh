#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd mysql
# CMD exiting is not the end of the critical section (DESIGN §7): what CMD
# left running is stopped before the release -- in CMD's process group, in a
# session of its own, and after a double fork -- and only then is the mutex
# released.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

# wait_pidfile FILE (inside CMD): a shell snippet that waits for FILE.
wait_pidfile='while [ ! -s "$1" ]; do sleep 0.01; done'

# check NAME SCRIPT: simba runs `sh -c SCRIPT $T/NAME.pid`, where SCRIPT
# leaves a `sleep 300` behind whose pid it writes to the file, then exits 0.
# A waiter started while CMD runs checks, as its own CMD, that the leftover
# is gone when it gets the mutex.
check() {
  local name=$1 script=$2 pidfile=$T/$1.pid
  rm -f -- "$T/holding"
  "$SIMBA" run --mutex m -- sh -c "$script
$wait_pidfile
touch \"\$0\"; sleep 1; exit 0" "$T/holding" "$pidfile" &
  local holder=$!
  wait_file "$T/holding" 10
  local left
  left=$(<"$pidfile")
  pid_alive "$left" || fail "$name: the leftover did not start"
  # The waiter's CMD fails when the leftover still runs (a zombie is dead).
  "$SIMBA" run --mutex m -- sh -c '
    read -r s 2>/dev/null <"/proc/$0/stat" || exit 0
    case ${s##*) } in Z*) exit 0 ;; esac
    echo "leftover $0 still runs under the next owner" >&2
    exit 1' "$left" &
  local waiter=$!
  wait_for 10 pid_dead "$holder"
  local rc=0
  wait "$holder" || rc=$?
  assert_eq 0 "$rc" "$name: simba's exit status (CMD exited 0)"
  pid_dead "$left" || fail "$name: the leftover $left still runs after simba exited"
  wait_for 10 pid_dead "$waiter"
  rc=0
  wait "$waiter" || rc=$?
  assert_eq 0 "$rc" "$name: the next owner found the leftover gone"
  assert_eq free "$(mutex_state m)" "$name: mutex m at the end"
}

# In CMD's process group.
check group 'sleep 300 & echo $! >"$1"'
# In a session (and process group) of its own.
check session 'setsid sh -c "echo \$\$ >\"\$0\"; exec sleep 300" "$1" &'
# A daemon: double fork (reparented to the watchdog, the subreaper) and setsid.
check daemon '( setsid sh -c "echo \$\$ >\"\$0\"; exec sleep 300" "$1" & )'

# Without a waiter: simba exits 0, the leftover is gone, the mutex free.
assert_exit 0 simba_bounded run --mutex m -- sh -c 'sleep 300 & echo $! >"$0"; exit 0' "$T/bg.pid"
pid_dead "$(<"$T/bg.pid")" || fail "the background sleep still runs after simba exited"
assert_exit 0 simba_bounded run --mutex m -- sh -c \
  'setsid sh -c "echo \$\$ >\"\$0\"; exec sleep 300" "$0" & while [ ! -s "$0" ]; do sleep 0.01; done; exit 0' \
  "$T/bg2.pid"
pid_dead "$(<"$T/bg2.pid")" || fail "the setsid sleep still runs after simba exited"
assert_eq free "$(mutex_state m)" "mutex m at the end"

# A leftover that ignores the kill signal: SIGKILL after --kill-after ends
# it, and simba then releases and exits at once. Its death must reach simba
# although it is no child of simba's (it was reparented to the watchdog):
# nothing else is left to wake simba then.
for leftover in '(trap "" TERM; echo $$ >"$0"; exec sleep 300) &' \
  '( setsid sh -c "trap \"\" TERM; echo \$\$ >\"\$0\"; exec sleep 300" "$0" & )'; do
  rm -f -- "$T/ignoring.pid"
  t0=$(now_ms)
  assert_exit 0 simba_bounded run --mutex m --transition 1s --kill-after 300ms -- sh -c "$leftover
while [ ! -s \"\$0\" ]; do sleep 0.01; done; exit 0" "$T/ignoring.pid"
  dt=$(($(now_ms) - t0))
  ((dt >= 250 && dt < 3000)) ||
    fail "simba took ${dt} ms to end after SIGKILL (300ms) of a leftover that ignores TERM ($leftover)"
  pid_dead "$(<"$T/ignoring.pid")" || fail "the leftover that ignores TERM still runs ($leftover)"
  assert_eq free "$(mutex_state m)" "mutex m after a leftover that ignores TERM"
done
