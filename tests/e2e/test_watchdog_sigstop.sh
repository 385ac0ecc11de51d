#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd mysql
# The child never outlives the lease, even when the supervisor is paused
# (DESIGN §4): with simba SIGSTOPped, the watchdog kills CMD within
# ttl + transition of the last renewal; when simba continues, it exits 76.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

"$SIMBA" run --mutex m --ttl 1s --transition 1s -- \
  sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$T/child.pid" &
holder=$!
wait_for 10 test -s "$T/child.pid"
child=$(<"$T/child.pid")
pid_alive "$child" || fail "CMD is not running"

is_stopped() {
  local stat
  read -r stat <"/proc/$1/stat" || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} == T ]]
}

t0=$(now_ms)
kill -STOP "$holder"
wait_for 2 is_stopped "$holder"
# ttl + transition after the last renewal (before the STOP), plus slack.
wait_for 2.5 pid_dead "$child"
dt=$(($(now_ms) - t0))
echo "CMD killed ${dt} ms after simba was stopped" >&2
is_stopped "$holder" || fail "simba is no longer stopped: the kill was not the watchdog's"

kill -CONT "$holder"
wait_for 10 pid_dead "$holder"
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of simba after it lost the lease while stopped"
