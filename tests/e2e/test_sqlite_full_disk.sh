#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# SQLite on a full disk (a small tmpfs, filled): a waiter's acquire fails
# with SQLITE_FULL. It says so once (a warning), retries with a back-off
# (no spinning: a handful of tries in seconds, not thousands), exits 69
# with the backend's error when --timeout passes (--no-wait at once), says
# nothing about releasing a lock it never held, and takes the mutex once
# the disk has room again, saying that the backend answers again.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

needs_root "mounts a small tmpfs"
needs mount
disk=$T/disk
mkdir -p -- "$disk"
mount -t tmpfs -o size=1m tmpfs "$disk" 2>"$T/mount.err" || skip "cannot mount a tmpfs here: $(cat -- "$T/mount.err")"
# Unmounted (lazily: a process may still have it open) before common.sh's
# clean-up removes $T; its exit status is the test's.
_full_disk_cleanup() {
  local rc=$?
  umount -l -- "$disk" 2>/dev/null
  (exit "$rc")
  _e2e_cleanup
}
trap _full_disk_cleanup EXIT

export SIMBA_BACKEND="sqlite:$disk/simba.db"
simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }
fill() { dd if=/dev/zero of="$disk/fill" bs=4k 2>/dev/null || true; sync; }

# The database exists and works; then the disk fills up.
assert_exit 0 simba_bounded run --mutex other -- true
fill
[[ $(df -P -- "$disk" | awk 'NR == 2 {print $4}') == 0 ]] || fail "the tmpfs is not full: $(df -P -- "$disk")"

# --timeout while the disk is full: 69 with SQLite's error, in two lines
# (the warning, the error); a few tries, not one every few milliseconds.
export SIMBA_CALL_COUNT_FILE=$T/calls
t0=$(now_ms)
assert_exit 69 simba_bounded run --mutex m --timeout 4s -- touch "$T/ran"
dt=$(($(now_ms) - t0))
((dt >= 3500 && dt < 8000)) || fail "--timeout 4s ended after ${dt} ms"
[[ ! -e $T/ran ]] || fail "CMD ran on a full disk"
grep -q "^simba: warning: backend failing while waiting for m: .*full" "$T/err" ||
  fail "no warning when the backend started failing: $(cat -- "$T/err")"
grep -q "^simba: error: gave up waiting for m after 4s: backend unavailable: .*database or disk is full" "$T/err" ||
  fail "no error line with SQLite's error: $(cat -- "$T/err")"
assert_eq 2 "$(wc -l <"$T/err")" "stderr lines ($(cat -- "$T/err"))"
! grep -qi release "$T/err" || fail "talks of a release of a lock it never held: $(cat -- "$T/err")"
calls=$(awk '{print $2}' "$T/calls")
# back-off 250 ms doubling (+ jitter) up to 5 s: at most 8 tries in 4 s,
# and the release after an unanswered acquire (retried every 250 ms: 17)
((calls >= 3 && calls <= 9)) || fail "$calls backend calls in 4 s (expected a backed-off few)"
rm -f -- "$T/calls"

# -q: only the error.
assert_exit 69 simba_bounded run -q --mutex m --timeout 1s -- true
assert_eq 1 "$(wc -l <"$T/err")" "stderr lines with -q ($(cat -- "$T/err"))"
grep -q "^simba: error: gave up waiting for m" "$T/err" || fail "-q: $(cat -- "$T/err")"

# --no-wait: 69 with the error, one line.
assert_exit 69 simba_bounded run --mutex m --no-wait -- true
grep -q "^simba: error: backend unavailable: .*database or disk is full" "$T/err" || fail "--no-wait: $(cat -- "$T/err")"
assert_eq 1 "$(wc -l <"$T/err")" "stderr lines of --no-wait ($(cat -- "$T/err"))"

# No --timeout: it waits, quietly after its one warning, and gets the mutex
# when the disk has room again.
unset SIMBA_CALL_COUNT_FILE
"$SIMBA" run --mutex m -- touch "$T/ran" 2>"$T/wait.err" &
waiter=$!
sleep 4
pid_alive "$waiter" || fail "the waiter ended on a full disk: $(cat -- "$T/wait.err")"
assert_eq 1 "$(wc -l <"$T/wait.err")" "lines of a waiter on a full disk for 4 s ($(cat -- "$T/wait.err"))"
rm -f -- "$disk/fill"
wait_for 10 pid_dead "$waiter"
rc=0
wait "$waiter" || rc=$?
assert_eq 0 "$rc" "the waiter's exit once the disk had room"
[[ -e $T/ran ]] || fail "CMD did not run"
grep -qE "^simba: backend answers again after [0-9]+s \([0-9]+ failed tries\)$" "$T/wait.err" ||
  fail "no line when the backend answered again: $(cat -- "$T/wait.err")"
assert_eq 2 "$(wc -l <"$T/wait.err")" "lines of the waiter ($(cat -- "$T/wait.err"))"
