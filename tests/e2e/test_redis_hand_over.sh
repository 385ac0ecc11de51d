#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# On Redis a release hands the mutex over: the first waiter becomes the
# owner in the release itself and starts CMD without an acquire of its own.
# Its backend calls (SIMBA_CALL_COUNT_FILE) are its first try and its
# release: two, where a waiter that is only woken makes three (it acquires
# again). Its CMD runs with a larger fencing token than the holder's.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis
port=${SIMBA_TEST_REDIS_URI##*:}
port=${port%%[/?]*}
prefix=${SIMBA_BACKEND##*prefix=}

# ZCARD KEY on the test's Redis.
zcard() {
  local line=''
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf '*2\r\n$5\r\nZCARD\r\n$%d\r\n%s\r\n' "${#1}" "$1" >&3
  IFS= read -r -t 2 line <&3 || true
  exec 3<&-
  line=${line%$'\r'}
  echo "${line#:}"
}
queued() { test "$(zcard "${prefix}{m}:waiters")" = 1; }

# The holder holds until the waiter is queued (at most 20 s).
"$SIMBA" run --mutex m -- sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0"; i=0
  while [ ! -e "$1" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done' "$T/holder.token" "$T/go" &
holder=$!
wait_for 10 test -s "$T/holder.token"
SIMBA_CALL_COUNT_FILE="$T/calls" "$SIMBA" run --mutex m -- sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0"' \
  "$T/waiter.token" &
waiter=$!
wait_for 15 queued
touch "$T/go"

rc=0
wait "$waiter" || rc=$?
assert_eq 0 "$rc" "waiter's exit status"
wait "$holder"
test -s "$T/waiter.token" || fail "the waiter's CMD did not run"
(($(<"$T/waiter.token") > $(<"$T/holder.token"))) ||
  fail "the waiter's token $(<"$T/waiter.token") is not above the holder's $(<"$T/holder.token")"
read -r pid calls <"$T/calls"
assert_eq "$waiter" "$pid" "the call count's process"
assert_eq 2 "$calls" "the waiter's backend calls (its first try and its release; an acquire of its own makes 3)"
assert_eq 0 "$(zcard "${prefix}{m}:waiters")" "waiters left in the queue"
