#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# `simba release --force` on Redis: the owner's simba hears it on its
# subscription (well before its next guard), stops CMD and exits 76. The
# lease is revoked: no owner, and free only when the old lease would have
# ended, so no new CMD overlaps the one being stopped.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

"$SIMBA" run --mutex m --contender-id victim --ttl 3s --transition 1s -- \
  sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 60' "$T/child.pid" &
holder=$!
wait_for 10 test -s "$T/child.pid"
child=$(<"$T/child.pid")
assert_eq victim "$(mutex_field m owner)" "owner before the release"
sleep 0.5 # the owner subscribes once CMD has run 200 ms

t0=$(now_ms)
assert_exit 0 simba_bounded release --mutex m --force
# Well before the next guard (at ttl 3 s): the notification did it.
wait_for 3 pid_dead "$child"
wait_for 3 pid_dead "$holder"
dt=$(($(now_ms) - t0))
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of the simba whose lock was broken"
echo "holder's CMD and simba gone ${dt} ms after the forced release" >&2

((dt < 2000)) || fail "the holder took ${dt} ms to stop (no notification?)"

state=$(mutex_state m)
owner=$(mutex_field m owner)
[[ $state == revoked && $owner != victim ]] ||
  fail "after the forced release m is $state (owner $owner), expected revoked with no owner"
# Nobody gets it before the revoked lease would have ended...
assert_exit 75 simba_bounded run --mutex m --no-wait -- true
# ... and anyone may after that (ttl + transition = 4 s after the last renewal).
is_free() { [[ $(mutex_state m) == free ]]; }
wait_for 5 is_free
assert_exit 0 simba_bounded run --mutex m --no-wait -- true
assert_exit 0 simba_bounded release --mutex m --force
