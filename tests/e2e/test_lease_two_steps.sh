#!/usr/bin/env bash
# backends: sqlite redis postgres etcd mysql
# Two steps of one lease at once (docs/recipes.md "A lock across the steps of a CI job"): a second
# `run --lease` while a step runs is refused (75, its CMD never starts) and
# leaves the lease as the running step's, so a `release --lease` meanwhile
# revokes it (the running step is stopped) instead of freeing it: another
# job's `run --no-wait` does not start beside the step. (simba once let the
# second step run; its end marked the lease as only held, the release freed
# it at once, and another job ran beside the first step.)
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

guarded() { "$SIMBA" status --mutex two --json | grep -o '"guarded":[a-z]*' | cut -d: -f2; }

handle=$("$SIMBA" acquire --mutex two --ttl 20s | sed -n 's/^SIMBA_LEASE=//p')
[[ -n $handle ]] || fail "acquire gave no handle"
assert_eq false "$(guarded)" "the lease between steps"

# step 1: runs until told to end (or stopped)
"$SIMBA" run --lease "$handle" -- sh -c 'touch "$1"; while [ ! -e "$2" ]; do sleep 0.05; done' \
  sh "$T/step1-ran" "$T/step1-end" 2>"$T/step1.err" &
step1=$!
wait_file "$T/step1-ran" 30
assert_eq true "$(guarded)" "the lease while step 1 runs"

# step 2 beside it: refused, CMD never starts
rc=0
"$SIMBA" run --lease "$handle" -- touch "$T/step2-ran" 2>"$T/step2.err" || rc=$?
[[ ! -e $T/step2-ran ]] || fail "step 2 ran beside step 1 (exit $rc)"
assert_eq 75 "$rc" "exit status of a second step while one runs ($(<"$T/step2.err"))"
grep -q "another step runs under the lease" "$T/step2.err" ||
  fail "step 2 did not say why: $(<"$T/step2.err")"
assert_eq true "$(guarded)" "the lease after the refused step (still step 1's)"

# The job's release while step 1 runs: a revocation, never a free mutex.
"$SIMBA" release --lease "$handle" 2>"$T/release.err" || true
rc=0
"$SIMBA" run --mutex two --no-wait -- touch "$T/other-ran" 2>"$T/other.err" || rc=$?
[[ ! -e $T/other-ran ]] || fail "another job ran beside step 1 (its exit $rc)"
assert_eq 75 "$rc" "another job's run --no-wait while step 1 runs ($(<"$T/other.err"))"

# step 1 is stopped (its lease was revoked), it does not run on
wait_for 30 pid_dead "$step1"
rc=0
wait "$step1" || rc=$?
[[ $rc != 0 ]] || fail "step 1 ended 0 after its lease was revoked: $(<"$T/step1.err")"
echo "step 1 exited $rc after the release" >&2
