#!/usr/bin/env bash
# backends: sqlite redis postgres pgbouncer
# --min-hold D (cron dedup, DESIGN §6): after CMD exits, simba exits at once
# but leaves the lease held until acquired_at + D; then it is free again.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

t0=$(now_ms)
assert_exit 0 simba_bounded run --mutex m --min-hold 3s --contender-id cron@host-a -- true
dt=$(($(now_ms) - t0))
((dt < 2000)) || fail "simba --min-hold 3s took ${dt} ms to exit (expected at once)"

# Still held by the first run, until about acquired_at + 3 s.
assert_eq holding "$(mutex_state m)" "state right after the --min-hold run"
assert_eq cron@host-a "$(mutex_field m label)" "owner right after the --min-hold run"
acquired=$(mutex_field m acquired_at)
until_at=$(mutex_field m transition_at)
hold=$((until_at - acquired))
((hold >= 2500 && hold <= 3500)) ||
  fail "the lease is valid for ${hold} ms after acquisition (expected about 3000)"
assert_exit 75 simba_bounded run --mutex m --no-wait -- touch "$T/ran"
[[ ! -e $T/ran ]] || fail "a second run got in during the --min-hold window"
# The lease outlives simba: 1.5 s later it is still held.
sleep 1.5
if (($(now_ms) - t0 < 2500)); then
  assert_exit 75 simba_bounded run --mutex m --no-wait -- touch "$T/ran"
  assert_eq holding "$(mutex_state m)" "state 1.5 s after the --min-hold run"
fi

# About 4 s after the first run, a --no-wait run succeeds.
is_free() { [[ $(mutex_state m) == free ]]; }
wait_for 6 is_free
free_after=$(($(now_ms) - t0))
((free_after >= 2500)) || fail "mutex free ${free_after} ms after the --min-hold 3s run (too early)"
sleep 1
assert_exit 0 simba_bounded run --mutex m --no-wait -- touch "$T/ran"
[[ -e $T/ran ]] || fail "the --no-wait run after the --min-hold window did not run CMD"

# A CMD that runs longer than --min-hold: released at once when it exits.
assert_exit 0 simba_bounded run --mutex m --min-hold 1s -- sleep 1.5
assert_eq free "$(mutex_state m)" "after a CMD that outlasted --min-hold"
