#!/usr/bin/env bash
# backends: sqlite redis postgres pgbouncer etcd mysql
# --min-hold D (cron dedup, DESIGN §6): after CMD exits, simba exits at once
# but leaves the lease held until acquired_at + D; then it is free again.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

t0=$(now_ms)
assert_exit 0 simba_bounded run --mutex m --min-hold 3s --contender-id cron@host-a -- true
dt=$(($(now_ms) - t0))
((dt < 2000)) || fail "simba --min-hold 3s took ${dt} ms to exit (expected at once)"

# Still held by the first run, until about acquired_at + 3 s: one status
# read (four of them may outlast the hold on a busy machine).
needs jq
status=$("$SIMBA" status --mutex m --json) || fail "simba status --json"
field() { jq -r --arg f "$1" '.mutexes[0][$f] // "null"' <<<"$status"; }
assert_eq holding "$(field state)" "state right after the --min-hold run"
assert_eq cron@host-a "$(field label)" "owner right after the --min-hold run"
acquired=$(field acquired_at)
until_at=$(field transition_at)
hold=$((until_at - acquired))
((hold >= 2500 && hold <= 3500)) ||
  fail "the lease is valid for ${hold} ms after acquisition (expected about 3000)"
# no_wait_in_hold WHAT: a --no-wait run is refused (75) while the hold
# lasts. One that ran must have reached the backend after the hold's end
# (until_at, on this host's clock like the backend's), so it ended after
# it: on a busy machine a run started in the window may get there late.
no_wait_in_hold() {
  local ended rc=0
  simba_bounded run --mutex m --no-wait -- touch "$T/ran" || rc=$?
  ended=$(now_ms)
  if ((rc == 0)); then
    ((ended >= until_at)) ||
      fail "$1: a --no-wait run got in during the --min-hold window (it ended at $ended, held until $until_at)"
    echo "$1: the --no-wait run reached the backend after the hold's end (slow machine)" >&2
    rm -f -- "$T/ran"
    return
  fi
  assert_eq 75 "$rc" "$1: exit status of a --no-wait run during the hold"
  [[ ! -e $T/ran ]] || fail "$1: a second run got in during the --min-hold window"
}
no_wait_in_hold "right after the --min-hold run"
# The lease outlives simba: 1.5 s later it is still held.
sleep 1.5
no_wait_in_hold "1.5 s after the --min-hold run"

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
