#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres pgbouncer redis-cluster etcd mysql
# `simba release --mutex m --force` breaks the lock: it exits 0, the owner's
# supervisor sees the loss, stops its CMD and exits 76 (well within
# ttl + transition). The lease is revoked: nobody owns it, and no new CMD
# can start while the one being stopped may still run. Its owner, once it
# has seen its CMD gone, ends it at once (issue 31 §4); an owner that
# cannot (stopped here with SIGSTOP) leaves it revoked until the old lease
# would have ended.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

"$SIMBA" run --mutex m --contender-id victim --ttl 2s --transition 1s -- \
  sh -c 'echo $$ >"$0"; exec sleep 60' "$T/child.pid" &
holder=$!
wait_for 10 test -s "$T/child.pid"
child=$(<"$T/child.pid")
assert_eq victim "$(mutex_field m label)" "owner before the release"

t0=$(now_ms)
assert_exit 0 simba_bounded release --mutex m --force
# ttl + transition + 1 s is the outer bound; it should be immediate.
wait_for 4 pid_dead "$child"
wait_for 4 pid_dead "$holder"
dt=$(($(now_ms) - t0))
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of the simba whose lock was broken"
echo "holder's CMD and simba gone ${dt} ms after the forced release" >&2

# Its owner ended the revoked lease once CMD was gone: free now, not at
# the end of the old lease's ttl + transition.
assert_eq free "$(mutex_state m)" "m after its forced owner exited"

# An owner that cannot stop its CMD (simba stopped) cannot end the lease:
# it stays revoked, and free only when the old lease would have ended.
"$SIMBA" run --mutex m --contender-id victim --ttl 2s --transition 1s -- \
  sh -c 'echo $$ >"$0"; exec sleep 60' "$T/child2.pid" &
holder=$!
wait_for 10 test -s "$T/child2.pid"
child=$(<"$T/child2.pid")
kill -STOP "$holder"
t0=$(now_ms)
assert_exit 0 simba_bounded release --mutex m --force
state=$(mutex_state m)
owner=$(mutex_field m owner)
[[ $state == revoked && $owner == null ]] ||
  fail "after the forced release m is $state (owner $owner), expected revoked with no owner"
# Free once the revoked lease would have ended (ttl + transition = 3 s);
# on etcd once etcd's lease of the key ends: whole seconds, one more than
# asked, and etcd's 500 ms expiry check (docs/backends/etcd.md).
is_free() { [[ $(mutex_state m) == free ]]; }
wait_for "$([[ ${SIMBA_E2E_BACKEND:-} == etcd ]] && echo 6 || echo 4)" is_free
kill -CONT "$holder"
wait_for 4 pid_dead "$child"
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of the stopped simba whose lock was broken"

# Releasing a free mutex is fine too.
assert_exit 0 simba_bounded release --mutex m --force
assert_eq free "$(mutex_state m)" "m after releasing it again"
# --force is required.
assert_exit 64 simba_bounded release --mutex m
