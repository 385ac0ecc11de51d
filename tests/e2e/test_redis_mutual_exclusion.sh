#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# Mutual exclusion on Redis: 3 shells run 20 critical sections each through
# `simba run --mutex m` on one Redis mutex; no two sections ever overlap,
# all 60 run, and the fencing tokens of the sections strictly increase.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis

log=$T/log
section='echo "start $$ $SIMBA_FENCING_TOKEN" >>"$0"; sleep 0.03; echo "end $$" >>"$0"'
loop() {
  local i rc
  for ((i = 0; i < 20; i++)); do
    rc=0
    timeout -k 5 60 "$SIMBA" run --mutex m --ttl 2s --transition 1s -- sh -c "$section" "$log" ||
      rc=$?
    ((rc == 0)) || echo "worker $1, run $i: exit $rc" >>"$T/failures"
  done
}

pids=()
for w in 1 2 3; do
  loop "$w" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait_for 150 pid_dead "$p"; done
for p in "${pids[@]}"; do wait "$p"; done

[[ ! -s $T/failures ]] || fail "some runs failed: $(cat -- "$T/failures")"
[[ -s $log ]] || fail "no critical section ran"

awk '
  $1 == "start" {
    if (open != "") { printf "line %d: start %s while %s is inside\n", NR, $2, open; bad = 1; exit }
    if ($3 + 0 <= last + 0) { printf "line %d: token %s after %s\n", NR, $3, last; bad = 1; exit }
    open = $2; last = $3; starts++; next
  }
  $1 == "end" {
    if (open != $2) { printf "line %d: end %s but the open section is [%s]\n", NR, $2, open; bad = 1; exit }
    open = ""; ends++; next
  }
  { printf "line %d: unexpected: %s\n", NR, $0; bad = 1; exit }
  END {
    if (bad) exit 1
    if (open != "") { printf "section of %s never ended\n", open; exit 1 }
    if (starts != 60 || ends != 60) { printf "expected 60 sections, got %d starts, %d ends\n", starts, ends; exit 1 }
  }
' "$log" >"$T/verdict" || fail "critical sections overlapped, tokens went back, or sections are missing: $(cat -- "$T/verdict")"

assert_eq free "$(mutex_state m)" "mutex m after all runs"
