#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres pgbouncer etcd mysql
# `simba release --force --token N` revokes only the lease with fencing
# token N (DESIGN §9: a forced release compares the token too): with another
# token it revokes nothing, says so, and exits 0; a token that is not a
# positive number is a usage error (64).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

"$SIMBA" run --mutex m --ttl 2s --transition 1s -- \
  sh -c 'echo $$ >"$0"; exec sleep 60' "$T/child.pid" &
holder=$!
wait_for 10 test -s "$T/child.pid"
child=$(<"$T/child.pid")
token=$(mutex_field m fencing_token)

assert_exit 0 simba_bounded release --mutex m --force --token $((token - 1))
grep -q "nothing revoked" "$T/err" || fail "no 'nothing revoked' notice: $(cat -- "$T/err")"
sleep 0.3
pid_alive "$child" || fail "a forced release with a stale token stopped the owner's CMD"
assert_eq held "$(mutex_state m)" "state after a forced release with a stale token"
assert_eq "$token" "$(mutex_field m fencing_token)" "token after a forced release with a stale token"

for bad in 0 -1 abc 99999999999999999999; do
  assert_exit 64 simba_bounded release --mutex m --force --token "$bad"
done
pid_alive "$child" || fail "a rejected --token stopped the owner's CMD"

assert_exit 0 simba_bounded release --mutex m --force --token "$token"
wait_for 4 pid_dead "$child"
wait_for 4 pid_dead "$holder"
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of the simba whose lease was revoked by token"
# Its owner, its CMD gone, ended the revoked lease (issue 31 §4): free.
assert_eq free "$(mutex_state m)" "state after the forced release by token and the owner's exit"
