#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd mysql
# simba acquire --slots N: the split-phase lease on one of N slots. Two
# jobs take the two slots of --slots 2 (each handle names its slot); a third
# waits in the queue, a --no-wait one exits 75, another N exits 64; a step
# under a handle runs with SIMBA_SLOT/SIMBA_SLOTS of that slot; release
# --lease frees exactly that slot and the waiting job gets it (woken, well
# before its --timeout); renew keeps the slot. schedule --slots 2 exits 64.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

acquire() { "$SIMBA" acquire --mutex jobs --slots 2 --ttl 20s "$@"; }
step() { (set -a && . "$1" && set +a && shift && "$SIMBA" run --lease "$SIMBA_LEASE" -- "$@"); }

assert_exit 0 acquire --env-file "$T/a.env"
assert_exit 0 acquire --env-file "$T/b.env"
grep -q '^SIMBA_SLOTS=2$' "$T/a.env" || fail "no SIMBA_SLOTS in the env file: $(<"$T/a.env")"
slot_a=$(sed -n 's/^SIMBA_SLOT=//p' "$T/a.env")
slot_b=$(sed -n 's/^SIMBA_SLOT=//p' "$T/b.env")
assert_eq "0 1" "$(printf '%s\n' "$slot_a" "$slot_b" | sort | tr '\n' ' ' | sed 's/ $//')" \
  "the slots of the two leases"
assert_exit 75 acquire --no-wait
assert_exit 64 "$SIMBA" acquire --mutex jobs --slots 3 --ttl 20s --no-wait
grep -q "held with --slots 2, not 3" "$T/err" || fail "64 without naming N: $(<"$T/err")"
assert_exit 64 "$SIMBA" schedule --mutex jobs --slots 2 --every 1s -- true

# A third job waits meanwhile.
(
  rc=0
  acquire --timeout 15s --env-file "$T/c.env" 2>"$T/c.err" || rc=$?
  echo "$rc" >"$T/c.done"
) &
queued() { "$SIMBA" status --mutex jobs --format json | grep -q '"position"'; }
wait_for 10 queued

# A step under job B's lease runs on B's slot.
assert_exit 0 step "$T/b.env" sh -c 'echo "$SIMBA_SLOT $SIMBA_SLOTS $SIMBA_MUTEX"'
assert_eq "$slot_b 2 jobs" "$(<"$T/out")" "SIMBA_SLOT SIMBA_SLOTS SIMBA_MUTEX of the step"
(set -a && . "$T/a.env" && "$SIMBA" renew --lease "$SIMBA_LEASE" >/dev/null) ||
  fail "renew of job A's slot"
[[ ! -e $T/c.done ]] || fail "the third job got a slot while both were held: $(<"$T/c.err")"

# Job B ends: its slot, and only it, goes to the waiting job.
released_at=$(now_ms)
(set -a && . "$T/b.env" && "$SIMBA" release --lease "$SIMBA_LEASE") || fail "release of job B"
wait_line "$T/c.done" 10
assert_eq 0 "$(<"$T/c.done")" "the waiting job's acquire"
took=$(($(now_ms) - released_at))
((took < 5000)) || fail "the waiting job took ${took} ms after the release"
assert_eq "$slot_b" "$(sed -n 's/^SIMBA_SLOT=//p' "$T/c.env")" "the slot the waiting job got"
assert_exit 0 step "$T/a.env" sh -c 'echo "$SIMBA_SLOT"'
assert_eq "$slot_a" "$(<"$T/out")" "job A's slot, still its own"
assert_exit 76 step "$T/b.env" true
(set -a && . "$T/a.env" && "$SIMBA" release --lease "$SIMBA_LEASE") || fail "release of job A"
(set -a && . "$T/c.env" && "$SIMBA" release --lease "$SIMBA_LEASE") || fail "release of job C"
assert_eq free "$(mutex_state jobs)" "the mutex after every job released"
