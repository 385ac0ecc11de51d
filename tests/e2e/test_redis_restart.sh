#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# Redis restarted without persistence under a holder: the lease is gone, so
# the holder's CMD is stopped and simba exits 76 (DESIGN §4); the next
# holder's fencing token is larger than every earlier one (the fence counter
# is seeded from the server's clock in microseconds).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis # skips like the others when Redis tests are off
start_own_redis
export SIMBA_BACKEND=$OWN_REDIS_URI
# A server just started: mark it new, or its first lease (the default
# 10 s + 2 s) would wait a quarantine of 13 s.
assert_exit 0 "$SIMBA" doctor --init

# Earlier holders, then the one that will lose its lease.
for i in 1 2 3; do
  "$SIMBA" run --mutex m -- sh -c 'echo "$SIMBA_FENCING_TOKEN" >>"$0"' "$T/tokens"
done
"$SIMBA" run --mutex m --ttl 1s --transition 1s -- \
  sh -c 'echo "$SIMBA_FENCING_TOKEN" >>"$1"; echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' \
  "$T/child.pid" "$T/tokens" &
holder=$!
wait_for 10 test -s "$T/child.pid"
child=$(<"$T/child.pid")

t0=$(now_ms)
restart_own_redis
# The next guard (within ttl = 1 s) finds no lease.
wait_for 4 pid_dead "$child"
wait_for 4 pid_dead "$holder"
dt=$(($(now_ms) - t0))
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of the holder whose lease the restart lost"
echo "CMD stopped ${dt} ms after the restart" >&2

# (It waits the quarantine of the new server run: its own lease, 2 s, + 1 s.)
"$SIMBA" run --mutex m --ttl 1s --transition 1s -- sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0"' "$T/next"
next=$(<"$T/next")
while read -r t; do
  ((next > t)) || fail "token after the restart ($next) is not larger than an earlier one ($t)"
done <"$T/tokens"
echo "tokens before: $(tr '\n' ' ' <"$T/tokens")after: $next" >&2
