#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd mysql
# A log without a terminal (CI) says what happened, unless -q: the waiting
# notice when the wait begins and again every SIMBA_WAIT_NOTICE_EVERY, one
# line when --timeout gives up and one on a --no-wait conflict, each naming
# the holder's label and since when (UTC) it holds the mutex. --log-format
# json carries the same as fields. (Stdin is /dev/null, stderr a file.)
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

needs python3
simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }
iso='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'

# The timed waiters below run side by side, each on a mutex of its own (a
# waiter queued behind another says its place in line), each held by
# "deployer" for the whole test; the --no-wait ones go meanwhile, on one
# more. hold MUTEX: such a holder; it renews every second, so a waiter
# looks about every 2 s.
holders=()
hold() {
  "$SIMBA" run --mutex "$1" --contender-id deployer --ttl 1s --transition 1s \
    -- sh -c 'touch "$0"; exec sleep 60' "$T/holding.${1#deploy/}" &
  holders+=($!)
  wait_file "$T/holding.${1#deploy/}" 10
}
for m in deploy/quiet deploy/again deploy/json deploy/busy; do hold "$m"; done
hold deploy/production
held_since=$(date -u +%s)
# waiter NAME CMD...: CMD in the background, its stdout, stderr and exit
# status in $T/NAME.out, .err and .rc; waited NAME CODE waits for it and
# checks the status (then $T/err is its stderr, as after assert_exit).
declare -A waiters
waiter() {
  local name=$1
  shift
  (
    rc=0
    "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
    echo "$rc" >"$T/$name.rc"
  ) &
  waiters[$name]=$!
}
waited() {
  wait "${waiters[$1]}"
  [[ $(<"$T/$1.rc") == "$2" ]] ||
    fail "$1: expected exit $2, got $(<"$T/$1.rc"): $(cat -- "$T/$1.out" "$T/$1.err")"
  cp -- "$T/$1.err" "$T/err"
}
waiter timeout simba_bounded run --mutex deploy/production --timeout 2s -- touch "$T/ran"
waiter quiet-timeout simba_bounded run -q --mutex deploy/quiet --timeout 1s -- true
waiter again env SIMBA_WAIT_NOTICE_EVERY=1s timeout -k 5 30 "$SIMBA" run --mutex deploy/again \
  --timeout 7s -- true
waiter json-timeout simba_bounded run --log-format json --mutex deploy/json --timeout 1s -- true

# --timeout: the waiting notice, then one line when it gives up; 75.
waited timeout 75
[[ ! -e $T/ran ]] || fail "CMD ran"
assert_eq 2 "$(wc -l <"$T/err")" "lines of a waiter that gave up ($(cat -- "$T/err"))"
grep -qE "^simba: waiting for deploy/production: held by deployer since $iso \(giving up in 2s\)$" "$T/err" ||
  fail "no waiting notice: $(cat -- "$T/err")"
grep -qE "^simba: gave up waiting for deploy/production after 2s: held by deployer since $iso$" "$T/err" ||
  fail "no 'gave up' line: $(cat -- "$T/err")"
# since when: the holder's start, within a few seconds
since=$(grep -oE "$iso" "$T/err" | head -1)
dt=$(($(date -u -d "$since" +%s) - held_since))
((dt >= -3 && dt <= 1)) || fail "held since $since, the holder started at $(date -u -d "@$held_since")"

# --no-wait: one line; 75.
assert_exit 75 simba_bounded run --mutex deploy/busy --no-wait -- touch "$T/ran"
[[ ! -e $T/ran ]] || fail "CMD ran"
assert_eq 1 "$(wc -l <"$T/err")" "lines of a --no-wait conflict ($(cat -- "$T/err"))"
grep -qE "^simba: deploy/busy is busy \(--no-wait\): held by deployer since $iso$" "$T/err" ||
  fail "no --no-wait line: $(cat -- "$T/err")"

# -q: nothing, in either case.
assert_exit 75 simba_bounded run -q --mutex deploy/busy --no-wait -- true
[[ ! -s $T/err ]] || fail "-q --no-wait printed: $(cat -- "$T/err")"
waited quiet-timeout 75
[[ ! -s $T/err ]] || fail "-q --timeout printed: $(cat -- "$T/err")"

# The notice again every SIMBA_WAIT_NOTICE_EVERY (at the next look after it
# is due), with how long it has waited.
waited again 75
again=$(grep -cE "^simba: still waiting for deploy/again after [0-9]+s: held by deployer since $iso \(giving up in [0-9]+m?s\)$" "$T/err" || true)
((again >= 2)) || fail "the notice was not repeated: $(cat -- "$T/err")"
grep -qE "^simba: gave up waiting for deploy/again after 7s: held by deployer" "$T/err" ||
  fail "no 'gave up' line: $(cat -- "$T/err")"
assert_exit 64 env SIMBA_WAIT_NOTICE_EVERY=often timeout 30 "$SIMBA" run --mutex m -- true
grep -q "^simba: error: .*SIMBA_WAIT_NOTICE_EVERY" "$T/err" || fail "bad SIMBA_WAIT_NOTICE_EVERY: $(cat -- "$T/err")"

# JSON: the same as fields, after time, pid, level and message.
waited json-timeout 75
cp -- "$T/err" "$T/timeout.json"
assert_exit 75 simba_bounded run --log-format json --mutex deploy/busy --no-wait -- true
cp -- "$T/err" "$T/busy.json"
python3 - "$T/timeout.json" "$T/busy.json" <<'PY' || fail "JSON notices: $(cat -- "$T/timeout.json" "$T/busy.json")"
import json, re, sys
iso = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
def objs(path):
    return [json.loads(l) for l in open(path, encoding="utf-8").read().splitlines()]
def check(o, event, level, mutex):
    assert list(o)[:4] == ["time", "pid", "level", "message"], o
    assert o["event"] == event and o["level"] == level, o
    assert o["mutex"] == mutex, o
    assert o["holder"] == "deployer", o
    assert re.fullmatch(r"deployer#[0-9a-f]{16}", o["holder_id"]), o
    assert iso.fullmatch(o["held_since"]) and o["held_since"] in o["message"], o
    assert isinstance(o["held_ms"], int) and o["held_ms"] > 0, o
    assert isinstance(o["waited_ms"], int), o
t = objs(sys.argv[1])
assert len(t) == 2, t
check(t[0], "waiting", "info", "deploy/json")
# The time left is the timeout less the time waited so far (the first look
# can take a while on a busy machine: 107 ms once in CI, so no bound on it).
assert 0 < t[0]["gives_up_in_ms"] <= 1000, t[0]
assert t[0]["gives_up_in_ms"] + t[0]["waited_ms"] == 1000, t[0]
check(t[1], "gave_up", "info", "deploy/json")
assert 1000 <= t[1]["waited_ms"] < 3000, t[1]
b = objs(sys.argv[2])
assert len(b) == 1, b
check(b[0], "busy", "info", "deploy/busy")
PY

kill -TERM "${holders[@]}"
for h in "${holders[@]}"; do wait "$h" || true; done
