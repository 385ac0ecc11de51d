#!/usr/bin/env bash
# Bad options, durations, backends and mutex names exit 64; a command that is
# not found exits 127, one that is not executable 126. Each time: exactly one
# line on stderr, "simba: error: ...", nothing on stdout, and the mutex is
# left free.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

# A bug that makes simba wait must fail this test quickly, not hang it.
simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

# check CODE ARGS...: simba ARGS... exits CODE with one error line, and
# mutex m is not held afterwards.
check() {
  local code=$1 what
  shift
  printf -v what '%q ' "$@"
  what="simba ${what% }"
  assert_exit "$code" simba_bounded "$@"
  local lines=()
  mapfile -t lines <"$T/err"
  if ((${#lines[@]} != 1)) || [[ ${lines[0]} != "simba: error: "* ]]; then
    printf -- '--- stderr of %s:\n' "$what" >&2
    cat -- "$T/err" >&2
    fail "$what: expected exactly one line 'simba: error: ...' on stderr"
  fi
  [[ ! -s $T/out ]] || fail "$what: expected nothing on stdout, got: $(cat -- "$T/out")"
  assert_eq free "$(mutex_state m)" "$what: state of mutex m afterwards"
}

# Durations and timing options.
check 64 run --mutex m --ttl 10x -- true
check 64 run --mutex m --ttl -1s -- true
check 64 run --mutex m --ttl '' -- true
check 64 run --mutex m --transition 0 -- true
check 64 run --mutex m --kill-after 2s --transition 2s -- true

# Settings that leave no room to renew before the kill point (docs/safety.md,
# "Timing limits"). The issue's own command once spun forever, logging
# millions of lines and ignoring TERM: a short bound, and the log's size
# is capped so that a regression fails fast instead of filling the disk.
simba_bounded() { { timeout -k 2 10 "$SIMBA" "$@" 2>&1 >&3 | head -c 65536 >&2; } 3>&1; }
check 64 run --mutex m --ttl 1ms --transition 1ms -- echo ran
grep -q 'the minimum is --ttl 607ms' "$T/err" ||
  fail "the error does not name the minimum --ttl: $(cat -- "$T/err")"
check 64 lead --mutex m --ttl 1ms --transition 1ms -- echo ran
check 64 schedule --mutex m --every 1s --ttl 200ms -- echo ran
check 64 run --mutex m --ttl 300ms --transition 2s --kill-after 1900ms -- true
simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }
# The minimum itself is fine.
assert_exit 0 simba_bounded run --mutex m --ttl 607ms --transition 1ms -- echo ran
assert_eq ran "$(cat -- "$T/out")" "output of CMD at the minimum ttl"

# Numbers out of range.
check 64 run --mutex m --conflict-exit-code 256 -- true
check 64 run --mutex m --conflict-exit-code -1 -- true
check 64 schedule --mutex m --every 1s --max-runs -1 -- true
# Counts are decimal: 0x10 is refused, 010 is ten (C's base 0 would read 8).
check 64 run --mutex m --slots 0x10 -- true
check 64 run --mutex m --conflict-exit-code 0x4b -- true
check 64 run --mutex m --slots 2e1 -- true
"$SIMBA" run --mutex decimal --slots 010 -- sh -c 'touch "$0"; sleep 30' "$T/slot.held" &
slot_holder=$!
wait_for 10 test -e "$T/slot.held"
check 64 run --mutex decimal --slots 8 -- true
grep -q -- "--slots 10" "$T/err" || fail "--slots 010 was not recorded as 10: $(cat -- "$T/err")"
assert_exit 0 simba_bounded run --mutex decimal --slots 10 -- true
kill -TERM "$slot_holder"
wait "$slot_holder" || true

# Backends.
check 64 run --mutex m --backend foo:bar -- true
check 64 run --mutex m --backend 'sqlite:' -- true

# Mutex names: 1-128 bytes of [A-Za-z0-9._:/@-].
check 64 run --mutex '' -- true
check 64 run --mutex "$(printf 'x%.0s' {1..129})" -- true
check 64 run --mutex 'a b' -- true
check 64 run --mutex $'a\nb' -- true

# No command.
check 64 run --mutex m --

# CMD before "--", an unknown option, contradicting options: the line says
# what is wrong.
check 64 run --mutex m true
grep -q "unexpected argument 'true': the command to run goes after '--'" "$T/err" ||
  fail "CMD before '--': $(cat -- "$T/err")"
check 64 lead --mutex m sleep 1
grep -q "goes after '--'" "$T/err" || fail "lead, CMD before '--': $(cat -- "$T/err")"
check 64 run --mutex m --tiemout 5s -- true
grep -q "unknown option '--tiemout'" "$T/err" || fail "unknown option: $(cat -- "$T/err")"
check 64 run --mutex m --no-wait --timeout 5s -- true
grep -q -- "--no-wait and --timeout" "$T/err" || fail "--no-wait --timeout: $(cat -- "$T/err")"
check 64 run --mutex m --timeout 1.5ms -- true
check 64 run --mutex m --ttl 0.0001s -- true

# release never takes the mutex from SIMBA_MUTEX (inside a job it names the
# job's own lock): it needs --mutex.
SIMBA_MUTEX=m check 64 release --force
grep -q "needs --mutex" "$T/err" || fail "release without --mutex: $(cat -- "$T/err")"

# The command cannot be started: acquired, then released at once.
check 127 run --mutex m -- /nonexistent-cmd
check 126 run --mutex m -- /etc/passwd

# Decimal durations that come to whole milliseconds are fine.
assert_exit 0 simba_bounded run --mutex m --ttl 1.5s --transition 0.5s --timeout 2.5s -- true

# The boundary itself is fine: 128 bytes, every allowed character class.
assert_exit 0 simba_bounded run --mutex "$(printf 'x%.0s' {1..128})" -- true
assert_exit 0 simba_bounded run --mutex 'ci/deploy-prod_1.2:x@host' -- true
assert_eq free "$(mutex_state m)" "mutex m after the valid runs"
