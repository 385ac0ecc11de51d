#!/usr/bin/env bash
# backends: sqlite redis postgres pgbouncer redis-cluster etcd mysql
# simba doctor on every backend (issue 32 §2): on the test's warmed-up
# backend the checks every backend shares (connection, clock, quarantine)
# are ok; every finding, the backend's own included, has a known verdict
# and, unless ok, a fix; the text has one line per finding of the JSON;
# the exit code is the worst verdict's (0, 1, 69).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs jq

bounded() { timeout -k 5 60 "$@"; }
"$SIMBA" run --mutex doctor-first -- true # the database, its tables, a warm server

rc=0
bounded "$SIMBA" doctor --json >"$T/json" 2>"$T/err" || rc=$?
[[ ! -s $T/err ]] || fail "doctor wrote on stderr: $(cat "$T/err")"
jq -e . "$T/json" >/dev/null || fail "not JSON: $(cat "$T/json")"
for check in connection clock quarantine; do
  assert_eq ok "$(jq -r --arg c "$check" '.findings[] | select(.check == $c) | .verdict' "$T/json")" \
    "$check on $SIMBA_BACKEND ($(cat "$T/json"))"
done
assert_eq 0 "$(jq '[.findings[] | select(.verdict != "ok" and .verdict != "warn" and .verdict != "fail")] | length' "$T/json")" \
  "unknown verdicts ($(cat "$T/json"))"
assert_eq 0 "$(jq '[.findings[] | select(.verdict != "ok" and (.fix == null or .fix == ""))] | length' "$T/json")" \
  "warnings or failures without a fix ($(cat "$T/json"))"
worst=$(jq -r .verdict "$T/json")
case $worst in
ok) expected=0 ;;
warn) expected=1 ;;
fail) expected=69 ;;
*) fail "overall verdict '$worst'" ;;
esac
assert_eq "$expected" "$rc" "exit code for an overall $worst ($(cat "$T/json"))"
assert_eq "$worst" "$(jq -r '[.findings[].verdict] | if index("fail") then "fail" elif index("warn") then "warn" else "ok" end' "$T/json")" \
  "the overall verdict is the worst one"

rc=0
bounded "$SIMBA" doctor >"$T/text" 2>"$T/err" || rc=$?
assert_eq "$expected" "$rc" "exit code of the text output"
assert_eq "$(jq '.findings | length' "$T/json")" "$(wc -l <"$T/text")" "lines of text ($(cat "$T/text"))"
grep -vqE '^(ok  |warn|fail) ' "$T/text" && fail "a line without a verdict: $(cat "$T/text")"
true
