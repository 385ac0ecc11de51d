#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd mysql
# `simba lead --restart`: what CMD's exit does while simba is the leader.
#   never (the default): release and exit with CMD's status.
#   on-failure: restart after a failure, release and exit 0 after a success.
#   always: restart after every exit, under the same lease (same fencing
#   token), --restart-delay apart, until a signal stops simba.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
# --transition 2s everywhere: the renewal is sent when the 1 s ttl ends, and
# CMD is stopped at the kill point (the transition less --kill-after, half
# of it), so a renewal has about 0.9 s to come back, not 0.4 s (under load
# e2e-mysql lost a lease mid-test: "command exited after the lease's kill
# point"). Nothing here waits for a lease to run out: it costs no time.

# --- never -----------------------------------------------------------------
assert_exit 3 timeout 20 "$SIMBA" lead --mutex r1 --ttl 1s --transition 2s --restart never -- \
  sh -c 'echo run >>"$0"; exit 3' "$T/never.log"
assert_eq 1 "$(wc -l <"$T/never.log")" "--restart never: CMD runs"
grep -q "acquired r1 (fencing token [0-9]*)" "$T/err" || fail "--restart never: no 'acquired' line"
grep -q "command exited with status 3" "$T/err" || fail "--restart never: no 'command exited with status 3' line"
grep -q "releasing r1" "$T/err" || fail "--restart never: no 'releasing r1' line"
! grep -q "restarting" "$T/err" || fail "--restart never: CMD was restarted"
assert_eq free "$(mutex_state r1)" "--restart never: state of the mutex after simba exited"

# The default is never, and a CMD killed by a signal gives 128+N.
assert_exit 137 timeout 20 "$SIMBA" lead --mutex r1 --ttl 1s --transition 2s -- \
  sh -c 'echo run >>"$0"; kill -KILL $$' "$T/default.log"
assert_eq 1 "$(wc -l <"$T/default.log")" "default restart policy: CMD runs"
assert_eq free "$(mutex_state r1)" "default restart policy: state of the mutex after simba exited"

# --- on-failure: fails twice, then succeeds ----------------------------------
assert_exit 0 timeout 20 "$SIMBA" lead --mutex r2 --ttl 1s --transition 2s \
  --restart on-failure --restart-delay 100ms -- \
  sh -c 'n=$(($(cat "$0" 2>/dev/null || echo 0) + 1)); echo $n >"$0"
         echo "start $n $SIMBA_FENCING_TOKEN" >>"$1"; [ $n -ge 3 ] || exit 5' \
  "$T/count" "$T/onfail.log"
assert_eq 3 "$(<"$T/count")" "--restart on-failure: CMD starts (2 failures, then a success)"
assert_eq 2 "$(grep -c "command exited with status 5" "$T/err")" "--restart on-failure: failures logged"
assert_eq 2 "$(grep -c "restarting the command in 100ms" "$T/err")" "--restart on-failure: restarts logged"
assert_eq 1 "$(cut -d' ' -f3 "$T/onfail.log" | sort -u | wc -l)" \
  "--restart on-failure: distinct fencing tokens over the restarts (one lease)"
assert_eq free "$(mutex_state r2)" "--restart on-failure: state of the mutex after simba exited"

# --- always ----------------------------------------------------------------
# CMD succeeds every time: always restarts it anyway.
"$SIMBA" lead --mutex r3 --ttl 1s --transition 2s --restart always --restart-delay 200ms -- \
  sh -c 'echo "start $SIMBA_FENCING_TOKEN $(date +%s%N)" >>"$0"' "$T/always.log" 2>"$T/always.err" &
lead=$!
starts() {
  local n
  n=$(grep -c '^start ' "$T/always.log" 2>/dev/null) || true
  (( ${n:-0} >= $1 ))
}
wait_for 10 starts 1
sleep 2
n=$(grep -c '^start ' "$T/always.log")
echo "--restart always: $n starts in ~2 s" >&2
((n >= 3)) || fail "--restart always --restart-delay 200ms: only $n starts in ~2 s"
# 200 ms apart at least: in 2 s (plus the first wait) no more than ~11.
((n <= 14)) || fail "--restart always --restart-delay 200ms: $n starts in ~2 s (delay not honoured)"
assert_eq 1 "$(cut -d' ' -f2 "$T/always.log" | sort -u | wc -l)" \
  "--restart always: distinct fencing tokens over the restarts (one lease)"
prev=
while read -r _ _ ns; do
  if [[ -n $prev ]]; then
    gap=$(((ns - prev) / 1000000))
    ((gap >= 180)) || fail "--restart always: runs ${gap} ms apart (--restart-delay 200ms)"
  fi
  prev=$ns
done <"$T/always.log"
# The owner renews when the ttl ends (the seed's rule), so a read during
# the guard's round trip sees the lease in its transition: still its lease
# (PostgreSQL under stress-ng saw it so), never free.
state=$(mutex_state r3)
[[ $state == held || $state == transition ]] ||
  fail "--restart always: state while running: expected held (or transition), got [$state]"
pid_alive "$lead" || fail "--restart always: simba exited"

kill -TERM "$lead"
wait_for 5 pid_dead "$lead"
rc=0
wait "$lead" || rc=$?
# No CMD running (128+15), or CMD got the TERM too (sh dies of it: 143).
assert_eq 143 "$rc" "--restart always: exit status after SIGTERM"
grep -q "releasing r3" "$T/always.err" || { cat -- "$T/always.err" >&2; fail "no 'releasing r3' line"; }
assert_eq free "$(mutex_state r3)" "--restart always: state of the mutex after SIGTERM"
n2=$(grep -c '^start ' "$T/always.log")
sleep 0.5
assert_eq "$n2" "$(grep -c '^start ' "$T/always.log")" "--restart always: starts after simba exited"

# SIGTERM after CMD exited 0 but before what it left is gone (simba is
# stopping it: the leftover ignores TERM until --kill-after's SIGKILL): a
# stop between runs, so 128+15, not the status of a run that was to be
# followed by another.
"$SIMBA" lead --mutex r5 --ttl 4s --transition 4s --kill-after 3s --restart always -- \
  sh -c '(trap "" TERM; echo left >>"$0"; exec sleep 30) &
         until [ -s "$0" ]; do sleep 0.01; done; exit 0' "$T/left.log" 2>"$T/left.err" &
lead=$!
wait_for 10 grep -q "command exited with status 0" "$T/left.err" ||
  { cat -- "$T/left.err" >&2; fail "--restart always: leftover not seen"; }
kill -TERM "$lead"
wait_for 10 pid_dead "$lead"
rc=0
wait "$lead" || rc=$?
assert_eq 143 "$rc" "--restart always: exit status after SIGTERM while CMD's leftovers were stopped"
assert_eq 1 "$(grep -c left "$T/left.log")" "--restart always: CMD restarted after SIGTERM"
assert_eq free "$(mutex_state r5)" "state of the mutex after SIGTERM while leftovers were stopped"

# A long-running CMD under --restart always: SIGTERM to simba is forwarded to
# CMD, and simba exits with CMD's status, not restarting it.
"$SIMBA" lead --mutex r4 --ttl 1s --transition 2s --restart always --restart-delay 100ms -- \
  sh -c 'trap "echo got-term >>\"\$0\"; exit 7" TERM; echo started >>"$0"; while :; do sleep 0.05; done' \
  "$T/fwd.log" 2>"$T/fwd.err" &
lead=$!
wait_for 10 grep -q started "$T/fwd.log"
kill -TERM "$lead"
wait_for 5 pid_dead "$lead"
rc=0
wait "$lead" || rc=$?
assert_eq 7 "$rc" "--restart always: exit status after SIGTERM with CMD running (CMD's status)"
grep -q got-term "$T/fwd.log" || fail "SIGTERM was not forwarded to CMD"
assert_eq 1 "$(grep -c started "$T/fwd.log")" "--restart always: CMD restarted after a forwarded SIGTERM"
assert_eq free "$(mutex_state r4)" "state of the mutex after SIGTERM with CMD running"
