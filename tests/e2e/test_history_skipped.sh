#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres redis-cluster mysql etcd
# Contenders that did not run leave a line in simba history (issue 31 §1):
# "skipped" with the reason and who held or ran it -- busy (--no-wait
# found it held), timeout (--timeout passed), already-ran (--once-per's
# window ran: who, when, its exit code); their exit codes unchanged (75).
# status --all shows each mutex's last --once-per run (table and JSON).
# SIMBA_HISTORY_LIMIT=0 writes none; a failure to write it (SQLite: a
# trigger refuses it) is one -v line, never the command's.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

needs jq sqlite3
host=$(hostname)
simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }
skipped() {
  "$SIMBA" history --mutex "$1" --json |
    jq -c '[.events[] | select(.event == "skipped") | "\(.reason) \(.label) by \(.by_label)"]'
}

# busy and timeout: the holder named, and its token.
"$SIMBA" run --mutex s --contender-id holder -- sh -c 'touch "$0"; exec sleep 60' "$T/held" &
holder=$!
wait_file "$T/held" 10
assert_exit 75 simba_bounded run --mutex s --contender-id eager --no-wait -- touch "$T/ran"
assert_exit 75 simba_bounded run --mutex s --contender-id patient --timeout 1s -- touch "$T/ran"
assert_exit 75 simba_bounded acquire --mutex s --contender-id leaser --ttl 1m --no-wait
[[ ! -e $T/ran ]] || fail "a CMD ran"
kill -TERM "$holder"
wait "$holder" || true
assert_eq '["busy eager by holder","timeout patient by holder","busy leaser by holder"]' \
  "$(skipped s)" "the skipped events of a held mutex"
token=$("$SIMBA" history --mutex s --json | jq '[.events[] | select(.event == "acquired")][0].fencing_token')
assert_eq "[\"$host $token run\",\"$host $token run\",\"$host $token acquire\"]" \
  "$("$SIMBA" history --mutex s --json |
    jq -c '[.events[] | select(.event == "skipped") | "\(.host) \(.fencing_token) \(.via)"]')" \
  "the skipped events' host, the holder's token, and via"
waited=$("$SIMBA" history --mutex s --json |
  jq '[.events[] | select(.event == "skipped" and .reason == "timeout")][0].waited_ms')
((waited >= 900 && waited < 5000)) || fail "timeout waited ${waited}ms (1s expected)"
assert_exit 0 "$SIMBA" history --mutex s
iso='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'
grep -qE "^$iso s skipped \(busy by holder since $iso\) eager \($host, pid [0-9]+, touch\), token $token$" \
  "$T/out" || fail "history's busy line: $(cat -- "$T/out")"
grep -qE "^$iso s skipped \(timeout by holder since $iso\) patient \(.*\), token $token, waited 1" \
  "$T/out" || fail "history's timeout line: $(cat -- "$T/out")"

# already-ran: who ran the window, when, how it ended; still 75.
"$SIMBA" run --mutex daily --once-per 1d --contender-id first -- sh -c 'exit 0'
assert_exit 75 simba_bounded run --mutex daily --once-per 1d --contender-id second -- touch "$T/ran"
[[ ! -e $T/ran ]] || fail "the second run of the window ran"
assert_eq '["already-ran second by first"]' "$(skipped daily)" "the skipped event of a window that ran"
assert_exit 0 "$SIMBA" history --mutex daily --json
jq -e '[.events[] | select(.event == "skipped")][0] | .exit_code == 0 and .held_ms >= 0 and .held_ms < 10000' \
  "$T/out" >/dev/null || fail "already-ran's exit code and time: $(cat -- "$T/out")"
assert_exit 0 "$SIMBA" history --mutex daily
grep -qE "^$iso daily skipped \(already-ran by first at $iso\) second \($host, pid [0-9]+, touch\), token [0-9]+, exit 0$" \
  "$T/out" || fail "history's already-ran line: $(cat -- "$T/out")"

# status --all: each mutex's last --once-per run; none for the others.
"$SIMBA" run --mutex weekly --once-per 7d --contender-id weekly-runner -- sh -c 'exit 3' || true
assert_exit 0 "$SIMBA" status --all --json
assert_eq '[["daily","first",0],["s",null,null],["weekly","weekly-runner",3]]' \
  "$(jq -c '[.mutexes[] | select(.mutex | test("^(daily|s|weekly)$")) |
    [.mutex, .last_once_per_run.label, .last_once_per_run.exit_code]]' "$T/out")" \
  "status --all --json: the last --once-per runs"
assert_exit 0 "$SIMBA" status --all
grep -qE "^daily: last --once-per run: window from $iso, started $iso on $host by first, exit 0 at $iso$" \
  "$T/out" || fail "status --all's table: $(cat -- "$T/out")"
grep -qE "^weekly: last --once-per run: .* by weekly-runner, exit 3 " "$T/out" ||
  fail "status --all's table: $(cat -- "$T/out")"
if grep -q "^s: " "$T/out"; then fail "status --all shows a run for s: $(cat -- "$T/out")"; fi

# SIMBA_HISTORY_LIMIT=0: no event, the same exit code.
SIMBA_HISTORY_LIMIT=0 assert_exit 75 simba_bounded run -v --mutex daily --once-per 1d \
  --contender-id third -- true
if grep -q "not in its history" "$T/err"; then fail "SIMBA_HISTORY_LIMIT=0: $(cat -- "$T/err")"; fi
assert_eq '["already-ran second by first"]' "$(skipped daily)" "SIMBA_HISTORY_LIMIT=0 writes none"

# SQLite: a write of the event that fails leaves the command as it was:
# the same exit code, at once, one -v line.
if [[ ${SIMBA_E2E_BACKEND:-sqlite} == sqlite ]]; then
  sqlite3 "$T/simba.db" "CREATE TRIGGER no_skipped BEFORE INSERT ON simba_events
    WHEN NEW.event = 'skipped' BEGIN SELECT RAISE(ABORT, 'refused by a test'); END"
  start=$(now_ms)
  assert_exit 75 simba_bounded run -v --mutex daily --once-per 1d --contender-id fourth -- true
  (($(now_ms) - start < 3000)) || fail "the failed write held the exit $(($(now_ms) - start))ms"
  grep -q "the skipped run of daily is not in its history: .*refused by a test" "$T/err" ||
    fail "no -v line for the failed write: $(cat -- "$T/err")"
  assert_eq '["already-ran second by first"]' "$(skipped daily)" "a refused skipped event"
fi
