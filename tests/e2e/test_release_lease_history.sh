#!/usr/bin/env bash
# backends: sqlite redis postgres mysql etcd
# simba acquire + release --lease, the documented end of a lease, is a
# release: history says `released`, and no loss is counted (status --json
# and simba_mutex_losses_total). A real release --force stays `forced`, a
# loss.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

needs jq
events() { "$SIMBA" history --mutex "$1" --json | jq -c '[.events[] | .event]'; }
losses() { "$SIMBA" status --mutex "$1" --json | jq -c '.mutexes[0].losses'; }

"$SIMBA" acquire --mutex rl --ttl 30s --contender-id job --env-file "$T/job.env" || fail "acquire"
(set -a && . "$T/job.env" && "$SIMBA" release --lease "$SIMBA_LEASE") || fail "release --lease"
assert_eq '["acquired","released"]' "$(events rl)" "history of acquire + release --lease"
assert_eq 0 "$(losses rl)" "losses after release --lease"
"$SIMBA" status --all --format openmetrics >"$T/metrics" || fail "status --format openmetrics"
grep -qE '^simba_mutex_losses_total\{[^}]*"rl"[^}]*\} 0$' "$T/metrics" ||
  fail "simba_mutex_losses_total after release --lease: $(grep losses "$T/metrics")"

# release --force of an acquired lease: forced, one loss.
"$SIMBA" acquire --mutex rf --ttl 30s --contender-id job --env-file "$T/f.env" || fail "acquire rf"
"$SIMBA" release --force --mutex rf -q || fail "release --force"
assert_eq '["acquired","forced"]' "$(events rf)" "history of acquire + release --force"
assert_eq 1 "$(losses rf)" "losses after release --force"
