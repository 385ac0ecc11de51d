#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres pgbouncer redis-cluster etcd mysql
# Mutual exclusion: 4 shells run 20 critical sections each through
# `simba run --mutex m`; no two sections ever overlap, all 80 run, and the
# fencing tokens of the sections strictly increase.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

log=$T/log
# Short ttl/transition: if a release notification were lost, the timed
# wake-up still comes within seconds, so the test stays bounded.
section='echo "start $$ $SIMBA_FENCING_TOKEN" >>"$0"; sleep 0.05; echo "end $$" >>"$0"'
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
for w in 1 2 3 4; do
  loop "$w" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait_for 150 pid_dead "$p"; done
for p in "${pids[@]}"; do wait "$p"; done

[[ ! -s $T/failures ]] || fail "some runs failed: $(cat -- "$T/failures")"
[[ -s $log ]] || fail "no critical section ran"

# No overlap: every "start P" is followed by "end P" before the next start.
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
    if (starts != 80 || ends != 80) { printf "expected 80 sections, got %d starts, %d ends\n", starts, ends; exit 1 }
  }
' "$log" >"$T/verdict" || fail "critical sections overlapped or are missing: $(cat -- "$T/verdict")"

assert_eq free "$(mutex_state m)" "mutex m after all runs"
