#!/usr/bin/env bash
# `simba history --json` of a large history (issue 36 §11): the whole
# document was built in memory first (1,000,000 events: 2.57 GB, 20 s;
# the text output of the same 360 MB). It is written event by event now:
# its peak RSS stays within twice the text output's (both hold the events
# the backend read), and its bytes are the document as before.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
command -v sqlite3 >/dev/null 2>&1 || skip "sqlite3 is not installed (package sqlite3)"
command -v python3 >/dev/null 2>&1 || skip "needs python3 (peak RSS)"
unset SIMBA_BACKEND
export SIMBA_HISTORY_LIMIT=1000000
# 50,000 events: a document built in memory would take some 125 MB (2.57 kB
# an event), the text output's peak stays near 20 MB: far over the bound.
n=50000
assert_exit 0 "$SIMBA" run --mutex m -- true
# One real event, copied n times (the ring's later positions).
sqlite3 "$SIMBA_HOME/simba.db" "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k
  WHERE i < $n) INSERT INTO simba_events SELECT 'm', 100 + i, 100 + i, e.at + i, e.event, e.owner,
  e.holder, e.token, e.exit_code, e.held_ms, e.waited_ms, e.reason, e.by_owner
  FROM k, (SELECT * FROM simba_events WHERE mutex = 'm' LIMIT 1) e"

# peak_kb ARGS...: simba's peak RSS (kB) for `simba ARGS` (stdout in $T/out)
peak_kb() {
  python3 -c '
import resource, subprocess, sys
with open(sys.argv[1], "wb") as out:
    rc = subprocess.call(sys.argv[2:], stdout=out)
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$T/out" "$SIMBA" "$@"
}
read -r rc text_kb < <(peak_kb history)
assert_eq 0 "$rc" "history's exit"
assert_eq $((n + 2)) "$(wc -l <"$T/out")" "text lines"
read -r rc json_kb < <(peak_kb history --json)
assert_eq 0 "$rc" "history --json's exit"
echo "$((n + 2)) events: text ${text_kb} kB, --json ${json_kb} kB peak RSS" >&2
assert_eq $((n + 2)) "$(jq '.events | length' "$T/out")" "events in the JSON"
assert_eq '1 true m' "$(jq -r '"\(.schema) \(.kept) \(.events[-1].mutex)"' "$T/out")" "the document"
((json_kb < 2 * text_kb)) || fail "--json took ${json_kb} kB, the text ${text_kb} kB: built in memory"
