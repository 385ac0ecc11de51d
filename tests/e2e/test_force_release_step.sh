#!/usr/bin/env bash
# backends: sqlite redis postgres etcd mysql
# A lease of a CI job's steps (run --lease) revoked by release --force is
# never ended early (issue 31 §4): its token is the job's, shared by every
# step, so no simba can vouch that no step's CMD still runs. While step 1's
# CMD takes its time to stop (it traps SIGTERM), the job's other commands
# -- a second step, `release --lease`, as an after_script would run them --
# must not free the mutex: a waiting job starts only after step 1's CMD
# stopped. (An earlier attempt let a release by the token end a revoked
# lease: that made this overlap possible.)
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

handle=$("$SIMBA" acquire --mutex m --ttl 3s --transition 2s | sed -n 's/^SIMBA_LEASE=//p')
[[ -n $handle ]] || fail "acquire gave no handle"
"$SIMBA" run --lease "$handle" --kill-after 1500ms -- sh -c '
  trap "sleep 1; date +%s%3N >\"\$0.stopped\"; exit 0" TERM
  echo $$ >"$0"; while :; do sleep 0.1; done' "$T/step1" 2>"$T/step1.err" &
step1=$!
wait_for 10 test -s "$T/step1"
"$SIMBA" run --mutex m --ttl 3s --transition 2s -v -- sh -c 'date +%s%3N >"$0"' "$T/other.start" \
  2>"$T/other.err" &
other=$!
wait_for 10 grep -q "waiting for m" "$T/other.err"

"$SIMBA" release --force --mutex m -q || fail "release --force"
# The job's other commands while step 1's CMD stops.
rc=0
"$SIMBA" run --lease "$handle" -- touch "$T/step2-ran" 2>"$T/step2.err" || rc=$?
[[ ! -e $T/step2-ran ]] || fail "step 2 ran under the revoked lease"
"$SIMBA" release --lease "$handle" 2>"$T/release.err" || true
rc=0
wait "$step1" || rc=$?
assert_eq 76 "$rc" "step 1's exit status after the forced release ($(<"$T/step1.err"))"
wait_for 20 test -s "$T/other.start"
wait "$other" || fail "the other job failed: $(<"$T/other.err")"
stopped=$(<"$T/step1.stopped") started=$(<"$T/other.start")
((started >= stopped)) ||
  fail "the other job's CMD started $((stopped - started)) ms before step 1's CMD stopped"
