#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd mysql
# Signals to simba (DESIGN §7): while CMD runs, SIGUSR1/USR2/TERM/INT/HUP reach
# CMD, simba exits with CMD's status and the mutex is free afterwards. While
# simba still waits for the mutex, SIGTERM cancels the wait: exit 143 at
# once, CMD never runs, nothing held.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

# CMD: traps signals, logs them; exits 7 on TERM/INT/HUP, goes on after USR1/USR2.
cmd=(sh -c '
  log=$0
  trap "echo got-USR1 >>\"\$log\"" USR1
  trap "echo got-USR2 >>\"\$log\"" USR2
  for s in TERM INT HUP; do trap "echo got-$s >>\"\$log\"; exit 7" $s; done
  touch "$log.ready"
  while :; do sleep 0.1; done 2>/dev/null # no "Terminated" notices from sh
')

# forward SIG...: start simba with CMD, send each SIG to simba in turn
# (only the last one stops CMD), expect exit 7 and each "got-SIG" in the log.
forward() {
  local log=$T/log.$1 s rc
  "$SIMBA" run --mutex m -- "${cmd[@]}" "$log" &
  local pid=$!
  wait_file "$log.ready" 10
  for s in "$@"; do
    kill -"$s" "$pid"
    wait_for 5 grep -qx "got-$s" "$log"
  done
  wait_for 5 pid_dead "$pid"
  rc=0
  wait "$pid" || rc=$?
  assert_eq 7 "$rc" "exit status of simba after SIG$* (CMD exits 7)"
  assert_eq free "$(mutex_state m)" "mutex m after SIG$*"
}

forward USR1 USR2 TERM
forward INT
forward HUP

# A signal while waiting for the mutex cancels the wait.
"$SIMBA" run --mutex m --contender-id holder -- sh -c 'touch "$0"; exec sleep 60' "$T/holding" &
holder=$!
wait_file "$T/holding" 10
"$SIMBA" run --mutex m --contender-id waiter -- touch "$T/waiter-ran" &
waiter=$!
sleep 0.5 # let it make its first attempt and wait
pid_alive "$waiter" || fail "the waiter did not wait"
t0=$(now_ms)
kill -TERM "$waiter"
wait_for 3 pid_dead "$waiter"
rc=0
wait "$waiter" || rc=$?
assert_eq 143 "$rc" "exit status of a waiting simba after SIGTERM"
echo "waiting simba exited $(($(now_ms) - t0)) ms after SIGTERM" >&2
assert_eq holder "$(mutex_field m label)" "owner of m after the waiter was cancelled"

# Once the holder is done, the cancelled waiter must not own it either.
kill -TERM "$holder"
wait_for 5 pid_dead "$holder"
rc=0
wait "$holder" || rc=$?
assert_eq 143 "$rc" "exit status of the holder after SIGTERM (sleep killed by TERM)"
assert_eq free "$(mutex_state m)" "mutex m at the end"
[[ ! -e $T/waiter-ran ]] || fail "the cancelled waiter's CMD ran"
