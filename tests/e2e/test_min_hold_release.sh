#!/usr/bin/env bash
# backends: sqlite redis postgres etcd mysql
# release --force of a lease kept only for --min-hold (its CMD has ended,
# nothing runs under it) frees the mutex at once, and says so; a lease whose
# CMD still runs is revoked as before (free only when it would have ended).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

# The cron recipe's hold: CMD is done at once, the lease stays for 10 minutes.
assert_exit 0 simba_bounded run --mutex m --no-wait --min-hold 10m -- true
assert_eq holding "$(mutex_state m)" "state during the --min-hold hold"
assert_exit 75 simba_bounded run --mutex m --no-wait -- true

assert_exit 0 simba_bounded release --force --mutex m
grep -q "only held for --min-hold" "$T/err" || fail "release message: $(cat -- "$T/err")"
! grep -q "being stopped" "$T/err" || fail "release talks of stopping a command: $(cat -- "$T/err")"
assert_eq free "$(mutex_state m)" "state right after the forced release of a hold"
assert_exit 0 simba_bounded run --mutex m --no-wait -- touch "$T/ran"
[[ -e $T/ran ]] || fail "the next run did not run CMD"

# A lease whose CMD runs: revoked, not freed (its CMD is stopped first).
# CMD stops only once the check below is made (a stop file; --kill-after
# gives it the time): once it is gone its simba frees the mutex
# (end_revoked). A CMD that took 2 s to stop was killed after --kill-after
# (1 s), and under load the check came after that (e2e-etcd).
"$SIMBA" run --mutex r --ttl 5s --transition 10s --kill-after 9s -- \
  sh -c 'trap "until [ -e \"\$0.stop\" ]; do sleep 0.05; done; exit 143" TERM
         touch "$0"; sleep 60 & wait' "$T/held" &
holder=$!
wait_file "$T/held" 10
assert_exit 0 simba_bounded release --force --mutex r
grep -q "being stopped" "$T/err" || fail "release of a running lease: $(cat -- "$T/err")"
assert_exit 75 simba_bounded run --mutex r --no-wait -- true
touch "$T/held.stop"
wait "$holder" || rc=$?
assert_eq 76 "${rc:-0}" "exit of the revoked holder"
