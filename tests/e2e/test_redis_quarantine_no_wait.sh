#!/usr/bin/env bash
# A quarantine is never the conflict code (issue 31 §1): the older
# cron recipe, `--no-wait --conflict-exit-code 0`, must not turn a Redis
# restart into a silent "busy, nothing to do". After a restart that may
# have lost a running lease, --no-wait and --timeout exit 69 with one line
# that says why, and CMD does not run.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis # skips like the others when Redis tests are off
start_own_redis
export SIMBA_BACKEND=$OWN_REDIS_URI
# The server just started is marked new: its first lease waits no quarantine
# (the dump below keeps that marker of the first run).
assert_exit 0 "$SIMBA" doctor --init

# A lease held when the snapshot is taken: after the restart every mutex
# the dump has no lease of is in quarantine (its lease may have been lost).
"$SIMBA" run --mutex other --ttl 2s --transition 1s --timeout 60s -- \
  sh -c 'echo go >"$0"; sleep 60' "$T/held.go" &
held=$!
wait_for 60 test -s "$T/held.go"
assert_eq "+OK" "$(redis_cmd SAVE)" "SAVE"
kill -KILL "$OWN_REDIS_PID"
wait "$OWN_REDIS_PID" 2>/dev/null || true
restart_own_redis
assert_eq quarantine "$(mutex_state cron)" "state of 'cron' after the restart"

rc=0
"$SIMBA" run --mutex cron --no-wait --conflict-exit-code 0 -- touch "$T/ran" 2>"$T/nowait.err" || rc=$?
assert_eq 69 "$rc" "--no-wait --conflict-exit-code 0 in a quarantine ($(<"$T/nowait.err"))"
grep -q "simba: error: .*cron is unavailable (--no-wait): in quarantine until about" "$T/nowait.err" ||
  fail "--no-wait's line does not say why: $(<"$T/nowait.err")"
[[ ! -e $T/ran ]] || fail "CMD ran in a quarantine"

rc=0
"$SIMBA" run --mutex cron --timeout 1s --conflict-exit-code 0 -- touch "$T/ran" 2>"$T/timeout.err" || rc=$?
assert_eq 69 "$rc" "--timeout 1s --conflict-exit-code 0 in a quarantine ($(<"$T/timeout.err"))"
grep -q "gave up waiting for cron after .*in quarantine until about" "$T/timeout.err" ||
  fail "--timeout's line does not say why: $(<"$T/timeout.err")"
[[ ! -e $T/ran ]] || fail "CMD ran in a quarantine"

kill -TERM "$held" 2>/dev/null || true
wait "$held" 2>/dev/null || true
