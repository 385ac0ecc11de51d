#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd mysql
# Nothing CMD started outlives the lease, a real daemon included: CMD starts
# one with a double fork and setsid, and the daemon holds an exclusive flock
# on $T/overlap (held by the flock process and by its sleep). Each next
# holder's CMD checks with `flock -n` that nobody holds it: an exact test of
# overlap. Three ways simba can end: kill -9 while CMD runs, SIGSTOP (the
# watchdog alone must act), and CMD exiting with the daemon left behind.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

# CMD: starts the daemon ($1: its pid file), then waits ($2 = wait), or
# exits once $0/go exists.
cmd='( setsid flock "$0/overlap" sh -c "echo \$\$ >\"\$0\"; exec sleep 300" "$1" & )
while [ ! -s "$1" ]; do sleep 0.01; done
[ "$2" = wait ] && exec sleep 300
while [ ! -e "$0/go" ]; do sleep 0.01; done
exit 0'
# The next holder's CMD: fails when the daemon still holds the lock.
# It notes when it started ($0/waiter.start, epoch ns) for the report.
check='date +%s%N >"$0/waiter.start"
flock -n "$0/overlap" true || { echo "the daemon still holds the lock" >&2; exit 1; }'

lock_free() { flock -n "$T/overlap" true; }

# start_holder NAME MODE: simba runs CMD; waits until the daemon holds the lock.
start_holder() {
  "$SIMBA" run --mutex m --ttl 1s --transition 1s -- sh -c "$cmd" "$T" "$T/$1.pid" "$2" &
  holder=$!
  wait_for 10 test -s "$T/$1.pid"
  daemon=$(<"$T/$1.pid")
  pid_alive "$daemon" || fail "$1: the daemon is not running"
  ! lock_free || fail "$1: the daemon does not hold the lock"
}

# start_waiter NAME: the next holder, queued behind the first.
start_waiter() {
  "$SIMBA" run --mutex m --ttl 1s --transition 1s -- sh -c "$check" "$T" &
  waiter=$!
  sleep 0.3
  pid_alive "$waiter" || fail "$1: the waiter did not wait"
}

finish_waiter() {
  wait_for 10 pid_dead "$waiter"
  local rc=0
  wait "$waiter" || rc=$?
  assert_eq 0 "$rc" "$1: the next holder ran alone (its flock -n succeeded)"
}

# 1. kill -9 of simba while CMD runs: the daemon dies at once, not at the
# lease's end (the lease is not simba's to end any more).
start_holder kill9 wait
start_waiter kill9
t0=$(now_ms)
kill -KILL "$holder"
{ wait "$holder"; } 2>/dev/null || true
wait_for 1.5 pid_dead "$daemon"
wait_for 1 lock_free
echo "kill -9: the daemon died $(($(now_ms) - t0)) ms after simba" >&2
finish_waiter kill9

# 2. simba stopped: the watchdog kills the daemon at the lease's deadline.
start_holder sigstop wait
watch_death "$daemon" "$T/daemon.died" &
wait_file "$T/daemon.died.ready" 10
start_waiter sigstop
t0=$(now_ms)
kill -STOP "$holder"
# The lease's end as the backend has it (simba renews no more).
lease_end=$(mutex_field m transition_at)
# ttl + transition after the last renewal, plus slack.
wait_for 3 pid_dead "$daemon"
wait_for 1 lock_free
wait_for 10 test -s "$T/daemon.died"
wait_for 10 pid_dead "$waiter"
# The report: the watchdog kills at the deadline, the safety margin before
# the lease's end (docs/safety.md); a daemon that dies after the
# lease's end means the kill or the exit was late.
died=$(($(<"$T/daemon.died") / 1000000))
started=none
[[ -s $T/waiter.start ]] && started="$(($(<"$T/waiter.start") / 1000000 - lease_end)) ms"
echo "SIGSTOP: the daemon died $((died - t0)) ms after simba was stopped, $((lease_end - died)) ms before the lease's end; the next holder's CMD started $started after it" >&2
kill -CONT "$holder"
wait_for 10 pid_dead "$holder"
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "sigstop: simba's exit status after it lost the lease while stopped"
finish_waiter sigstop

# 3. CMD exits 0 and leaves the daemon: stopped before the release.
start_holder leftover exit
start_waiter leftover
touch "$T/go"
wait_for 10 pid_dead "$holder"
rc=0
wait "$holder" || rc=$?
assert_eq 0 "$rc" "leftover: simba's exit status (CMD exited 0)"
pid_dead "$daemon" || fail "leftover: the daemon still runs after simba exited"
finish_waiter leftover
assert_eq free "$(mutex_state m)" "mutex m at the end"
