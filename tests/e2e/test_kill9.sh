#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres pgbouncer redis-cluster etcd mysql
# kill -9 of the owner's simba: its CMD dies with it (PR_SET_PDEATHSIG), and
# what CMD started in the same process group dies by the watchdog's group
# kill at the lease deadline; a waiter takes over once the lease expired.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

"$SIMBA" run --mutex m --ttl 1s --transition 1s -- \
  sh -c 'sleep 300 & echo $! >"$0"; echo $$ >"$1"; wait' "$T/grandchild.pid" "$T/child.pid" &
holder=$!
wait_for 10 test -s "$T/child.pid"
wait_for 10 test -s "$T/grandchild.pid"
child=$(<"$T/child.pid")
grandchild=$(<"$T/grandchild.pid")
pid_alive "$child" || fail "CMD is not running"
pid_alive "$grandchild" || fail "CMD's background sleep is not running"

# The waiter is waiting before the kill.
"$SIMBA" run --mutex m --ttl 1s --transition 1s -- sh -c 'date +%s%3N >"$0"' "$T/acquired" 2>"$T/waiter.err" &
waiter=$!
wait_for 10 grep -q "^simba: waiting for m: held by " "$T/waiter.err" # it found the mutex held
[[ ! -e $T/acquired ]] || fail "the waiter got in while the holder held the mutex"

t0=$(now_ms)
kill -KILL "$holder"
{ wait "$holder"; } 2>/dev/null || true # no "Killed" job notice
wait_for 2 pid_dead "$child"
wait_for 2 pid_dead "$grandchild"
echo "CMD and its background sleep gone $(($(now_ms) - t0)) ms after kill -9" >&2

# The waiter acquires once the lease expired: within ttl + transition + its
# wake-up jitter (< 1 s), plus a little slack for a loaded machine.
wait_for 10 test -s "$T/acquired"
acquired=$(<"$T/acquired")
gap=$((acquired - t0))
echo "waiter acquired ${gap} ms after kill -9" >&2
# etcd: its lease is granted a second more and ends at etcd's next check
# for ended leases (twice a second): docs/backends/etcd.md.
bound=3500
[[ ${SIMBA_E2E_BACKEND:-} == etcd ]] && bound=$((bound + 1500))
((gap <= bound)) || fail "the waiter acquired ${gap} ms after kill -9 (expected <= ttl + transition + 1 s)"
wait_for 5 pid_dead "$waiter"
rc=0
wait "$waiter" || rc=$?
assert_eq 0 "$rc" "waiter's exit status"
