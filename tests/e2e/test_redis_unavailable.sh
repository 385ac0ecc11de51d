#!/usr/bin/env bash
# Redis that cannot be used ends simba at once with exit 69 and one clear
# line: nothing listening, a wrong or missing password, a server that does
# not answer (paused); the password never shows. A malformed URI is 64.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis
start_own_redis --requirepass right-pw-42
uri="redis://127.0.0.1:$OWN_REDIS_PORT/0?timeout=500ms"

bounded() { timeout -k 5 20 "$@"; }
no_secret() {
  ! grep -q -e right-pw-42 -e wrong-pw-17 -- "$T/out" "$T/err" ||
    fail "a password was printed: $(cat -- "$T/out" "$T/err")"
}
one_line() {
  assert_eq 1 "$(wc -l <"$T/err")" "lines on stderr ($(cat -- "$T/err"))"
}

# Nothing listening: refused at once.
port=$OWN_REDIS_PORT
closed=$((port == 65535 ? port - 1 : port + 1))
for ((i = 0; i < 50; i++)); do redis_ping "$closed" || break; closed=$((closed - 2)); done
redis_ping "$closed" && skip "found no closed port near $port"
t0=$(now_ms)
assert_exit 69 bounded "$SIMBA" run --mutex m --backend "redis://:wrong-pw-17@127.0.0.1:$closed" -- true
(($(now_ms) - t0 < 1500)) || fail "connection refused took $(($(now_ms) - t0)) ms"
no_secret
one_line

# Wrong password, in the URI or in SIMBA_REDIS_PASSWORD.
assert_exit 69 bounded "$SIMBA" run --mutex m --backend "redis://:wrong-pw-17@127.0.0.1:$OWN_REDIS_PORT" -- true
no_secret
one_line
grep -q password "$T/err" || fail "no word about the password: $(cat -- "$T/err")"
assert_exit 69 env SIMBA_REDIS_PASSWORD=wrong-pw-17 timeout 20 "$SIMBA" status --backend "$uri"
no_secret
# No password at all.
assert_exit 69 bounded "$SIMBA" status --backend "$uri"
grep -q SIMBA_REDIS_PASSWORD "$T/err" || fail "no hint at SIMBA_REDIS_PASSWORD: $(cat -- "$T/err")"

# The right one, from the environment: works, and is neither in what simba
# tells its child (SIMBA_HELD names the backend) nor in status.
export SIMBA_REDIS_PASSWORD=right-pw-42
# The server was just started: marked new, its first lease waits no
# quarantine (the default lease's, 13 s).
assert_exit 0 bounded "$SIMBA" doctor --init --backend "$uri"
no_secret
# shellcheck disable=SC2016
assert_exit 0 bounded "$SIMBA" run --mutex m --backend "$uri" -- sh -c 'echo "$SIMBA_HELD"'
grep -q "redis://127.0.0.1:$OWN_REDIS_PORT/0" "$T/out" || fail "SIMBA_HELD: $(cat -- "$T/out")"
no_secret
assert_exit 0 bounded "$SIMBA" status --backend "$uri" --json
no_secret
assert_exit 0 bounded "$SIMBA" run --mutex m --backend "redis://:right-pw-42@127.0.0.1:$OWN_REDIS_PORT/0" -v \
  -- sh -c 'echo "$SIMBA_HELD"'
no_secret

# A server that does not answer: 69 within the URI's timeout (500 ms).
kill -STOP "$OWN_REDIS_PID"
t0=$(now_ms)
assert_exit 69 bounded "$SIMBA" run --mutex m --backend "$uri" -- true
dt=$(($(now_ms) - t0))
kill -CONT "$OWN_REDIS_PID"
((dt < 1500)) || fail "an unresponsive server took ${dt} ms to be reported (timeout=500ms)"
one_line

# Malformed URIs: usage errors.
assert_exit 64 bounded "$SIMBA" status --backend "redis://127.0.0.1:99999"
assert_exit 64 bounded "$SIMBA" status --backend "redis://127.0.0.1/x"
assert_exit 64 bounded "$SIMBA" status --backend "redis://127.0.0.1?nonsense=1"

# A password without "@host" (the user forgot it) is not a port, and is
# never echoed back: in the URI shown or in the reason.
for bad in "redis://admin:wrong-pw-17" "redis://admin:wrong-pw-17/0" "redis://:wrong-pw-17?timeout=1s"; do
  assert_exit 64 bounded "$SIMBA" status --backend "$bad"
  no_secret
  one_line
  assert_exit 64 bounded "$SIMBA" run --mutex m --backend "$bad" -- true
  no_secret
done
