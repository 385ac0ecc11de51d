#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# The URI's timeout= is the longest one call may take, above the default
# 2 s too: a server that answers after 3 s is waited for with timeout=5s
# (the run gets its lease), and given up on after 2 s without it (exit 69).
# A long timeout never lets an owner's guard run past the kill point: with
# timeout=10s, CMD is still stopped before transition_at.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis
start_own_redis
uri=redis://127.0.0.1:$OWN_REDIS_PORT/0 # no timeout= (OWN_REDIS_URI has 500ms)

# Paused for 3 s while a run waits for its acquire's answer.
paused_for_3s() {
  kill -STOP "$OWN_REDIS_PID"
  sleep 3
  kill -CONT "$OWN_REDIS_PID"
}

# Without timeout=: 2 s, then exit 69 and nothing run.
# The server was just started: marked new, its first lease waits no
# quarantine (1 s + 2 s + 1 s).
assert_exit 0 env SIMBA_BACKEND="$uri" "$SIMBA" doctor --init
SIMBA_BACKEND=$uri "$SIMBA" run --mutex m --ttl 1s -- true # the scripts loaded
paused_for_3s &
pauser=$!
sleep 0.2
rc=0
SIMBA_BACKEND=$uri "$SIMBA" run --mutex m -- touch "$T/ran.default" \
  2>"$T/default.err" || rc=$?
wait "$pauser"
assert_eq 69 "$rc" "exit status of a run whose server did not answer within 2 s"
grep -q 'within 2s' "$T/default.err" || fail "no timeout after 2 s: $(cat -- "$T/default.err")"
[[ ! -e $T/ran.default ]] || fail "CMD ran without an answer"

# timeout=5s: the answer after 3 s is taken.
paused_for_3s &
pauser=$!
sleep 0.2
rc=0
SIMBA_BACKEND="$uri?timeout=5s" "$SIMBA" run --mutex m -- touch "$T/ran.5s" \
  2>"$T/5s.err" || rc=$?
wait "$pauser"
assert_eq 0 "$rc" "exit status of a run with timeout=5s whose server answered after 3 s ($(cat -- "$T/5s.err"))"
[[ -e $T/ran.5s ]] || fail "CMD did not run"

# timeout=10s while owning: the kill point still bounds every guard.
SIMBA_BACKEND="$uri?timeout=10s" "$SIMBA" run --mutex m --ttl 1s --transition 1s -- \
  sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$T/child.pid" &
holder=$!
wait_for 10 test -s "$T/child.pid"
child=$(<"$T/child.pid")
t0=$(now_ms)
kill -STOP "$OWN_REDIS_PID"
wait_for 5 pid_dead "$child"
dt=$(($(now_ms) - t0))
# Resumed before simba is waited for (unlike test_redis_sigstop): its
# release, once CMD is stopped, may wait out the whole 10 s.
kill -CONT "$OWN_REDIS_PID"
((dt <= 2250)) || fail "CMD outlived the lease with timeout=10s: gone ${dt} ms after the pause (ttl + transition = 2000 ms)"
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of the holder whose server paused (timeout=10s)"
