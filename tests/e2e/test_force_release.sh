#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# `simba release --mutex m --force` breaks the lock: it exits 0, the owner's
# supervisor sees the loss, stops its CMD and exits 76 (well within
# ttl + transition), and the mutex is free (or has a new owner).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

"$SIMBA" run --mutex m --contender-id victim --ttl 2s --transition 1s -- \
  sh -c 'echo $$ >"$0"; exec sleep 60' "$T/child.pid" &
holder=$!
wait_for 10 test -s "$T/child.pid"
child=$(<"$T/child.pid")
assert_eq victim "$(mutex_field m owner)" "owner before the release"

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
[[ $state == free || $owner != victim ]] ||
  fail "after the forced release m is $state, still owned by the old holder"

# Releasing a free mutex is fine too.
assert_exit 0 simba_bounded release --mutex m --force
assert_eq free "$(mutex_state m)" "m after releasing it again"
# --force is required.
assert_exit 64 simba_bounded release --mutex m
