#!/usr/bin/env bash
# Bad input to acquire, run --lease, renew and release --lease: one line on
# stderr, exit 64, nothing held, nothing run.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

one_error_line() {
  [[ $(wc -l <"$T/err") == 1 ]] && grep -q '^simba: error: ' "$T/err" ||
    fail "expected one error line, got: $(<"$T/err")"
}
nothing_held() { assert_eq free "$(mutex_state m)" "state of m after [$*]"; }

assert_exit 64 "$SIMBA" acquire --mutex m
one_error_line
grep -q -- "--ttl" "$T/err" || fail "acquire without --ttl said: $(<"$T/err")"
nothing_held acquire without --ttl
assert_exit 64 "$SIMBA" acquire --mutex m --ttl 30s --env-file "$T/no/such/dir/env"
one_error_line
nothing_held acquire with an env file that cannot be opened
# A FIFO nobody reads would block the open for ever: refused at once.
mkfifo "$T/fifo"
assert_exit 64 timeout -k 2 10 "$SIMBA" acquire --mutex m --ttl 30s --env-file "$T/fifo"
one_error_line
grep -q "a FIFO that nobody reads" "$T/err" || fail "the FIFO's error: $(<"$T/err")"
nothing_held acquire with a FIFO nobody reads as its env file
assert_exit 64 "$SIMBA" acquire --mutex m --ttl 30s --no-wait --timeout 1s
one_error_line
assert_exit 64 "$SIMBA" acquire --mutex 'a b' --ttl 30s
one_error_line

"$SIMBA" acquire --mutex m --ttl 30s >"$T/env" || fail "acquire"
lease=$(sed -n 's/^SIMBA_LEASE=//p' "$T/env")
damaged=${lease%?}x # its last character changed
[[ $damaged == "$lease" ]] && damaged=${lease%?}y
for args in "run --lease $lease --mutex other -- touch $T/ran" \
  "run --lease $lease --ttl 5s -- touch $T/ran" \
  "run --lease $lease --min-hold 5s -- touch $T/ran" \
  "run --lease $damaged -- touch $T/ran" \
  "run --lease ${lease:0:40} -- touch $T/ran" \
  "release --lease $lease --force" \
  "release --lease $lease --mutex m" \
  "renew --lease not-a-handle" \
  "renew --lease $lease --ttl 0"; do
  # shellcheck disable=SC2086 # words on purpose
  assert_exit 64 "$SIMBA" $args
  one_error_line
done
[[ -e $T/ran ]] && fail "a refused step ran its command"
assert_eq 64 "$("$SIMBA" run --lease '' -- touch "$T/ran" 2>/dev/null; echo $?)" "run --lease ''"
[[ -e $T/ran ]] && fail "run --lease '' ran its command"
assert_exit 0 "$SIMBA" release --lease "$lease"
nothing_held the release
