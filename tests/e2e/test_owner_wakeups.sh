#!/usr/bin/env bash
# shellcheck disable=SC2016 # $0 in single quotes is for the sh -c CMD
# backends: sqlite redis postgres etcd
# An owner hears of what ends its lease at once, and of nothing else: a
# `release --force` stops its CMD long before its next guard is due
# (--ttl 10s: ten seconds away), and an idle holder's own guards do not
# wake it (etcd's watch of its own key woke on each of its guards'
# rewrites, and sent one more guard each: two guards per ttl, not one).
# Not on MySQL, where nothing wakes an owner: a forced one stops its CMD
# at its next guard (docs/backends/mysql.md).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

# An idle holder, --ttl 1500ms for 6 s: the acquire, a guard per ttl (4),
# the release; a guard or two more under load, not one per guard (10).
SIMBA_CALL_COUNT_FILE=$T/calls "$SIMBA" run --mutex idle --ttl 1500ms --transition 1s -- sleep 6 ||
  fail "the idle holder failed"
read -r _ calls <"$T/calls"
echo "an idle holder over 6 s with --ttl 1500ms: $calls backend calls" >&2
((calls <= 9)) || fail "an idle holder made $calls backend calls over 6 s (--ttl 1500ms): more than one guard per ttl"

"$SIMBA" run --mutex m --ttl 10s --transition 2s -- sh -c 'echo $$ >"$0"; exec sleep 60' "$T/child.pid" &
holder=$!
wait_for 10 test -s "$T/child.pid"
child=$(<"$T/child.pid")
sleep 0.5 # its wake-ups set up
t0=$(now_ms)
"$SIMBA" release --mutex m --force -q || fail "release --force"
wait_for 5 pid_dead "$child"
dt=$(($(now_ms) - t0))
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of the forced owner"
echo "the forced owner's CMD was gone ${dt} ms after the force" >&2
((dt < 4000)) || fail "the forced owner stopped its CMD ${dt} ms after the force: at its guard, not at once"
