#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres pgbouncer redis-cluster
# `simba release --mutex m --force` breaks the lock: it exits 0, the owner's
# supervisor sees the loss, stops its CMD and exits 76 (well within
# ttl + transition). The lease is revoked: nobody owns it, and it becomes
# free when the old lease would have ended, so no new CMD can overlap the
# one being stopped.
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

state=$(mutex_state m)
owner=$(mutex_field m owner)
[[ $state == revoked && $owner == null ]] ||
  fail "after the forced release m is $state (owner $owner), expected revoked with no owner"
# Free once the revoked lease would have ended (ttl + transition = 3 s).
is_free() { [[ $(mutex_state m) == free ]]; }
wait_for 4 is_free

# Releasing a free mutex is fine too.
assert_exit 0 simba_bounded release --mutex m --force
assert_eq free "$(mutex_state m)" "m after releasing it again"
# --force is required.
assert_exit 64 simba_bounded release --mutex m
