#!/usr/bin/env bash
# backends: sqlite redis postgres mysql etcd
# run --once-per: a run that failed (non-zero exit, or its lease lost) keeps
# the window closed, except to a contender given --retry-failed; a run that
# succeeded closes it to everyone. One window of 1 day whose start is put an
# hour back with --offset, so that the test never crosses a boundary.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

day=86400000
offset=$(((($(now_ms) - 3600000) % day + day) % day))
once() { timeout -k 5 30 "$SIMBA" run --mutex nightly --once-per 1d --offset "${offset}ms" "$@"; }

# Bad input: one line, exit 64, nothing run.
assert_exit 64 "$SIMBA" run --mutex x --offset 1h -- touch "$T/bad"
grep -q "^simba: error: --offset needs --once-per" "$T/err" || fail "$(cat "$T/err")"
assert_exit 64 "$SIMBA" run --mutex x --retry-failed -- touch "$T/bad"
assert_exit 64 "$SIMBA" run --mutex x --once-per 1h --offset 1h -- touch "$T/bad"
assert_exit 64 "$SIMBA" run --mutex x --once-per 1h --min-hold 1m -- touch "$T/bad"
assert_exit 64 "$SIMBA" run --mutex x --once-per 0 -- touch "$T/bad"
[[ ! -e $T/bad ]] || fail "a refused command line ran CMD"

assert_exit 3 once --contender-id host-a -- sh -c "echo a >>'$T/runs'; exit 3"
# Without --retry-failed: not again in this window.
assert_exit 75 once --contender-id host-b -- sh -c "echo b >>'$T/runs'"
grep -q "already ran in this window on .* (exit 3; contender host-a)" "$T/err" ||
  fail "the refusal did not name the failed run: $(cat "$T/err")"
assert_exit 9 once --contender-id host-b --conflict-exit-code 9 -- sh -c "echo b >>'$T/runs'"
# With it: once more (and it fails again: once more again).
assert_exit 4 once --contender-id host-c --retry-failed -- sh -c "echo c >>'$T/runs'; exit 4"
assert_exit 0 once --contender-id host-d --retry-failed -- sh -c "echo d >>'$T/runs'"
# Succeeded: closed, also to --retry-failed.
assert_exit 75 once --contender-id host-e --retry-failed -- sh -c "echo e >>'$T/runs'"
grep -q "(exit 0; contender host-d)" "$T/err" || fail "expected host-d's run named: $(cat "$T/err")"
assert_eq "a c d" "$(tr '\n' ' ' <"$T/runs" | sed 's/ $//')" "the runs"

# A lost lease counts as a failed run: simba killed by SIGKILL while its
# CMD runs (the watchdog stops CMD; the lease runs out unreleased).
"$SIMBA" run --mutex lost --once-per 1d --offset "${offset}ms" --ttl 1s --transition 500ms \
  --contender-id host-a -- sh -c "echo a >>'$T/lost'; exec sleep 30" &
pid=$!
wait_line "$T/lost" 10
kill -KILL "$pid"
lost() { timeout -k 5 30 "$SIMBA" run --mutex lost --once-per 1d --offset "${offset}ms" "$@"; }
assert_exit 75 lost --contender-id host-b -- sh -c "echo b >>'$T/lost'"
grep -q "already ran in this window on .* (lease lost; contender host-a)" "$T/err" ||
  fail "the refusal did not say the lease was lost: $(cat "$T/err")"
assert_exit 0 lost --contender-id host-c --retry-failed -- sh -c "echo c >>'$T/lost'"
assert_eq "a c" "$(tr '\n' ' ' <"$T/lost" | sed 's/ $//')" "the runs after a lost lease"

# status --mutex shows the last run's record.
assert_exit 0 "$SIMBA" status --mutex nightly
grep -q "last --once-per run: window from .* by host-d, exit 0 at" "$T/out" ||
  fail "status did not show the done record: $(cat "$T/out")"
assert_exit 0 "$SIMBA" status --mutex nightly --json
grep -q '"last_once_per_run":{"exit_code":0,' "$T/out" ||
  fail "status --json did not show the done record: $(cat "$T/out")"
