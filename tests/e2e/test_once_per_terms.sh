#!/usr/bin/env bash
# backends: sqlite redis postgres mysql etcd
# run --once-per: the contenders of a mutex share its terms (issue 36 §3).
# A run of --once-per 1d (an --offset that keeps the window away from its
# boundary); then --once-per 1h, 1s, and 1d with another --offset must
# exit 64 naming both terms, without running CMD (each period used to
# replace the other's record, so every one ran). The same terms again are
# judged as before: already ran.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

day=86400000
offset=$(((($(now_ms) - 3600000) % day + day) % day))
"$SIMBA" run --mutex job --once-per 1d --offset "${offset}ms" -- sh -c "echo first >>'$T/runs'"
assert_eq first "$(cat -- "$T/runs")" "the first run"

for terms in "1h" "1s" "1d --offset $(((offset + 60000) % day))ms"; do
  # shellcheck disable=SC2086 # the terms are words
  assert_exit 64 "$SIMBA" run --mutex job --once-per $terms -- sh -c "echo '$terms' >>'$T/runs'"
  grep -q "is run with --once-per 24h --offset [^,]*, not --once-per [0-9]" "$T/err" ||
    fail "the refusal of --once-per $terms: $(cat -- "$T/err")"
done
rc=0
"$SIMBA" run --mutex job --once-per 1d --offset "${offset}ms" -- sh -c "echo again >>'$T/runs'" || rc=$?
((rc != 0 && rc != 64)) || fail "the same terms again: exit $rc"
assert_eq first "$(cat -- "$T/runs")" "runs after all of them"
