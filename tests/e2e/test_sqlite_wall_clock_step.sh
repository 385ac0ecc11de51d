#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# SQLite leases run on CLOCK_BOOTTIME, not on the wall clock: a simba whose
# wall clock reads an hour later (an NTP step, `date -s`; simulated with
# the test hook SIMBA_TEST_WALL_CLOCK_SHIFT_MS, which shifts the clock
# SQLite sees) finds the mutex held, not expired, and waits; `status` shows
# the lease in that process's wall-clock terms (acquired a moment ago).
# SQLite only: a Redis lease keeps the server's clock.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs python3

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }
hour=3600000

"$SIMBA" run --mutex m --ttl 3s --transition 1s -- \
  sh -c 'echo $$ >"$0"; exec sleep 60' "$T/a.pid" &
holder=$!
wait_for 10 test -s "$T/a.pid"
token_a=$(mutex_field m fencing_token)

# Forward: the mutex is still A's.
assert_exit 75 env SIMBA_TEST_WALL_CLOCK_SHIFT_MS=$hour \
  "$SIMBA" run --mutex m --no-wait -- sh -c 'echo B ran >>"$0"' "$T/b.ran"
[[ ! -e $T/b.ran ]] || fail "B ran beside A after its clock jumped an hour forward"

# Backward: the same.
assert_exit 75 env SIMBA_TEST_WALL_CLOCK_SHIFT_MS=-$hour \
  "$SIMBA" run --mutex m --no-wait -- sh -c 'echo B ran >>"$0"' "$T/b.ran"
[[ ! -e $T/b.ran ]] || fail "B ran beside A after its clock jumped an hour back"

# status, an hour ahead: held, acquired seconds ago by that clock.
json=$(SIMBA_TEST_WALL_CLOCK_SHIFT_MS=$hour simba_bounded status --mutex m --json)
read -r now acquired state < <(python3 -c '
import json, sys
d = json.load(sys.stdin)
m = d["mutexes"][0]
print(d["backend_now"], m["acquired_at"], m["state"])' <<<"$json")
assert_eq held "$state" "state seen an hour ahead"
ago=$((now - acquired))
((ago >= 0 && ago < 20000)) || fail "acquired_at is ${ago} ms before now an hour ahead: $json"
wall=$(now_ms)
((now - wall > hour - 20000 && now - wall < hour + 20000)) ||
  fail "backend_now ($now) is not an hour ahead of the wall clock ($wall)"

# A waiter an hour ahead takes the mutex only once A has released it, with
# a larger token.
SIMBA_TEST_WALL_CLOCK_SHIFT_MS=$hour "$SIMBA" run --mutex m --timeout 30s -- \
  sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0"' "$T/b.token" &
waiter=$!
sleep 1
[[ ! -e $T/b.token ]] || fail "the waiter ran while A held the mutex"
pid_alive "$(<"$T/a.pid")" || fail "A's CMD is gone"
kill -TERM "$holder"
wait "$holder" || true
wait "$waiter" || fail "the waiter failed"
token_b=$(<"$T/b.token")
((token_b > token_a)) || fail "token $token_b after $token_a"
