#!/usr/bin/env bash
# The quarantine after a restart covers the leases that may still run, not
# the longest lease ever asked for (issue 36 §8): one `run --ttl 1000000h
# --min-hold 1s -- true`, released, then a short lease; SAVE; Redis killed
# (-9) and restarted on that dump. Every mutex used to be "in quarantine
# until about 2141"; now the quarantine ends with the longest lease that
# was live (the short one) or the one asked for, + 1 s, and status shows it.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis # skips like the others when Redis tests are off
start_own_redis
export SIMBA_BACKEND=$OWN_REDIS_URI

# The first lease would wait out the quarantine of a fresh database: the
# server just started is marked new.
assert_exit 0 "$SIMBA" doctor --init
"$SIMBA" run --mutex warm --ttl 1s --transition 1s -- true
"$SIMBA" run --mutex long --ttl 1000000h --min-hold 1s -- true
long_free() { [[ $(mutex_state long) == free ]]; }
wait_for 20 long_free # its hold of 1 s ended
# A short lease still held when the snapshot is taken: the longest live one.
"$SIMBA" run --mutex short --ttl 2s --transition 1s -- sh -c 'echo go >"$0"; sleep 60' "$T/short.go" &
short=$!
wait_for 10 test -s "$T/short.go"
assert_eq "+OK" "$(redis_cmd SAVE)" "SAVE"

kill -KILL "$OWN_REDIS_PID"
wait "$OWN_REDIS_PID" 2>/dev/null || true
restart_own_redis

# status shows the quarantine (of the restart, before anyone acquires), on
# status shows the quarantine (of the restart, before anyone acquires), on
# the released long mutex too.
state=$(mutex_state long)
assert_eq quarantine "$state" "state of 'long' (released) after the restart"
# An unrelated mutex runs once the short lease, or its own, cannot run.
started=$(now_ms)
"$SIMBA" run --mutex other --ttl 2s --transition 1s --timeout 60s -- sh -c 'date +%s%3N >"$0"' \
  "$T/other.start" 2>"$T/other.err" || fail "the unrelated mutex did not run: $(cat -- "$T/other.err")"
grep -E "in quarantine until about" "$T/other.err" >&2 || true
grep -qE "until about 2[1-9][0-9]{2}-" "$T/other.err" && fail "a quarantine of a century: $(<"$T/other.err")"
waited=$(($(<"$T/other.start") - started))
echo "the unrelated mutex started $waited ms after the restart" >&2
# Its bound: the short lease's 3 s (or its own) + 1 s, plus a loaded machine.
((waited < 30000)) || fail "the unrelated mutex waited $waited ms"
kill -TERM "$short" 2>/dev/null || true
wait "$short" 2>/dev/null || true
