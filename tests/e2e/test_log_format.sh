#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# --log-format json: every stderr line of run, lead and schedule is one JSON
# object {"time": ISO-8601 UTC with ms, "pid", "level", "message", then a
# waiter's notices' own fields (event, mutex, holder...)}, quotes and
# backslashes escaped; -q prints nothing on success; text stays the default;
# errors that end simba stay one plain line.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

needs python3
simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

# check_json FILE PID: every line of FILE is a log object of PID; prints
# "level<TAB>message" per line.
check_json() {
  python3 - "$1" "$2" <<'PY'
import json, re, sys
path, pid = sys.argv[1], int(sys.argv[2])
lines = open(path, encoding="utf-8").read().splitlines()
if not lines:
    sys.exit(f"{path}: no log lines")
for line in lines:
    try:
        o = json.loads(line)
    except ValueError as e:
        sys.exit(f"not JSON ({e}): {line!r}")
    if list(o)[:4] != ["time", "pid", "level", "message"]:
        sys.exit(f"keys {list(o)}, expected time, pid, level, message first: {line!r}")
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", o["time"]):
        sys.exit(f"time is not ISO-8601 UTC with ms: {line!r}")
    if o["pid"] != pid:
        sys.exit(f"pid {o['pid']}, expected {pid}: {line!r}")
    if o["level"] not in ("info", "verbose", "warning", "notice", "error"):
        sys.exit(f"unknown level: {line!r}")
    if not isinstance(o["message"], str) or not o["message"]:
        sys.exit(f"message is not a string: {line!r}")
    print(f"{o['level']}\t{o['message']}")
PY
}

# run -v: verbose lines, with simba's pid (so simba itself runs in the
# background, not under timeout; ctest bounds the test).
"$SIMBA" run --log-format json -v --mutex m -- true 2>"$T/run.err" &
pid=$!
wait "$pid" || fail "simba run exited $?"
check_json "$T/run.err" "$pid" >"$T/run.log" || fail "run -v --log-format json"
grep -qP '^verbose\tacquired m \(fencing token [0-9]+\)$' "$T/run.log" ||
  fail "no 'acquired' line: $(cat -- "$T/run.log")"
grep -qP '^verbose\tcommand exited with status 0$' "$T/run.log" ||
  fail "no 'command exited' line: $(cat -- "$T/run.log")"

# A holder whose id needs escaping; a waiter logs the waiting notice.
"$SIMBA" run --mutex w --contender-id 'q"u\o:te' -- sh -c ': >"$0"; exec sleep 60' "$T/held" &
holder=$!
wait_file "$T/held" 10
"$SIMBA" run --log-format json -v --mutex w --timeout 300ms -- true 2>"$T/wait.err" &
pid=$!
rc=0
wait "$pid" || rc=$?
assert_eq 75 "$rc" "exit of the waiter that timed out"
check_json "$T/wait.err" "$pid" >"$T/wait.log" || fail "the waiter's log"
# (the holder's owner id: its label and its instance id)
grep -qF "$(printf 'info\twaiting for w: held by q"u\\o:te since ')" "$T/wait.log" ||
  fail "no escaped waiting notice: $(cat -- "$T/wait.log")"
kill -TERM "$holder"
wait "$holder" || true

# lead logs its transitions at level info without -v.
"$SIMBA" lead --log-format json --mutex l -- sh -c 'exit 3' 2>"$T/lead.err" &
pid=$!
rc=0
wait "$pid" || rc=$?
assert_eq 3 "$rc" "exit of lead --restart never"
check_json "$T/lead.err" "$pid" >"$T/lead.log" || fail "lead's log"
grep -qP '^info\tacquired l ' "$T/lead.log" || fail "lead: no 'acquired': $(cat -- "$T/lead.log")"
grep -qP '^info\tcommand exited with status 3$' "$T/lead.log" ||
  fail "lead: no 'command exited': $(cat -- "$T/lead.log")"

# schedule too.
"$SIMBA" schedule --log-format json --mutex s --every 100ms --max-runs 2 -- true 2>"$T/sched.err" &
pid=$!
wait "$pid" || fail "schedule exited $?"
check_json "$T/sched.err" "$pid" >/dev/null || fail "schedule's log"

# -q: nothing at all on success, in either format.
assert_exit 0 simba_bounded run --log-format json -q -v --mutex m -- true
[[ ! -s $T/err ]] || fail "run -q printed: $(cat -- "$T/err")"
assert_exit 0 simba_bounded lead --log-format json -q --mutex l -- true
[[ ! -s $T/err ]] || fail "lead -q printed: $(cat -- "$T/err")"

# text is the default.
assert_exit 0 simba_bounded run -v --mutex m -- true
grep -q '^simba: .*acquired m' "$T/err" || fail "text log: $(cat -- "$T/err")"
assert_exit 0 simba_bounded run --log-format text -v --mutex m -- true
! grep -q '^{' "$T/err" || fail "--log-format text printed JSON: $(cat -- "$T/err")"

# Errors that end simba stay plain text; a bad format is a usage error.
assert_exit 127 simba_bounded run --log-format json --mutex m -- "$T/no-such-command"
grep -q '^simba: error: ' "$T/err" || fail "error line: $(cat -- "$T/err")"
assert_exit 64 simba_bounded run --log-format xml --mutex m -- true
grep -q "^simba: error: --log-format must be text or json" "$T/err" ||
  fail "bad --log-format: $(cat -- "$T/err")"
