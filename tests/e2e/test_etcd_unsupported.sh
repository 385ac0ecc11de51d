#!/usr/bin/env bash
# backends: sqlite
# What the etcd backend does not have yet (docs/backends/etcd.md) is said,
# with the documented exit code, at once: --once-per is refused by the
# backend (69); nothing is left queued.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs_backend etcd
export SIMBA_BACKEND="$SIMBA_TEST_ETCD_URI/unsupported-$$"
bounded() { timeout -k 5 20 "$@"; }

assert_exit 69 bounded "$SIMBA" run --mutex m --once-per 1d -- true
grep -q "simba: error: .*--once-per is not supported on etcd" "$T/err" || fail "once-per: $(<"$T/err")"
[[ ! -s $T/out ]] || fail "CMD ran: $(<"$T/out")"
# Nothing left in the queue: the next run takes the mutex at once.
assert_exit 0 bounded "$SIMBA" run --mutex m --no-wait -- true
