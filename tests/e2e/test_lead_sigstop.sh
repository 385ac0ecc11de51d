#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the CMD script
# backends: sqlite redis postgres etcd mysql
# A leader whose simba is SIGSTOPped for longer than its lease (DESIGN §4):
# the watchdog kills its CMD before the next leader's CMD starts; after
# SIGCONT the old simba sees the loss, does not run its CMD next to the new
# leader's, and contends again.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/leader_common.sh"

log=$T/log
# CMD: "start PID SIMBA TOKEN NS" (SIMBA: the parent of CMD's parent, simba's
# watchdog), then holds an exclusive flock on $T/excl
# until it dies (the kernel drops the lock the moment the process exits): a
# CMD that starts while another is still alive records OVERLAP.
cat >"$T/cmd.sh" <<'EOF'
log=$1 dir=$2
exec 9>>"$dir/excl"
flock -n 9 || echo "OVERLAP $$ $SIMBA_FENCING_TOKEN $(date +%s%N)" >>"$log"
read -r _ _ _ simba _ <"/proc/$PPID/stat"
echo "start $$ $simba $SIMBA_FENCING_TOKEN $(date +%s%N)" >>"$log"
exec sleep 300
EOF

check_no_overlap() {
  if grep -q '^OVERLAP' "$log" 2>/dev/null; then
    cat -- "$log" >&2
    fail "a CMD started while another CMD was still running"
  fi
}

# Two instances; whichever wins is the leader. --kill-after 100ms, not half
# the 1 s transition: a leader renews when its ttl ends and stops CMD at
# the kill point (the lease's end less --kill-after), so its renewal has
# about 0.8 s to come back, not 0.4 s (the other lead tests lost leases
# under load so). The lease's length, and so the takeover, stay as they
# were; CMD dies of the TERM at once.
"$SIMBA" lead --mutex m --ttl 1s --transition 1s --kill-after 100ms -- sh "$T/cmd.sh" "$log" "$T" 2>"$T/err.1" &
s1=$!
"$SIMBA" lead --mutex m --ttl 1s --transition 1s --kill-after 100ms -- sh "$T/cmd.sh" "$log" "$T" 2>"$T/err.2" &
s2=$!
wait_for 10 starts_at_least "$log" 1
# The other instance waits (status lists it in the queue): it started and
# did not get the mutex.
queued() { "$SIMBA" status --mutex m --format json | grep -q '"position"'; }
wait_for 10 queued
assert_eq 1 "$(starts "$log")" "CMD starts before the SIGSTOP"
read -r _ cmd1 leader token1 _ < <(grep '^start ' "$log")
if [[ $leader == "$s1" ]]; then other=$s2; elif [[ $leader == "$s2" ]]; then other=$s1; else
  fail "CMD's parent $leader is neither simba ($s1, $s2)"
fi
pid_alive "$cmd1" || fail "the leader's CMD is not running"

# The old CMD's time of death (common.sh): information next to the
# flock check.
watch_death "$cmd1" "$T/died" &
wait_file "$T/died.ready" 60 # the watcher is ready (it holds the pidfd or polls)
pid_alive "$cmd1" || fail "the leader's CMD died before the SIGSTOP"

t0=$(now_ms)
kill -STOP "$leader"
wait_for 2 is_stopped "$leader"

# ttl + transition after the last renewal, and the other instance takes over.
wait_for 3 pid_dead "$cmd1"
wait_for 6 starts_at_least "$log" 2
wait_for 10 test -s "$T/died"
died=$(<"$T/died")
read -r _ cmd2 leader2 token2 ns2 < <(grep '^start ' "$log" | sed -n 2p)
# The exact check first: the kernel's flock says whether the new CMD
# started while the old one still lived.
check_no_overlap
echo "old CMD died $((died / 1000000 - t0)) ms after SIGSTOP; new CMD started $((ns2 / 1000000 - t0)) ms after SIGSTOP ($(((ns2 - died) / 1000)) us later)" >&2
# The two clocks are read by two processes (the watcher wakes when the
# kernel notifies the pidfd, after the exit dropped the flock, and may be
# scheduled late on a busy machine): information, not the check.
((died < ns2)) || echo "note: the watcher saw the old CMD's death $(((died - ns2) / 1000)) us after the new CMD's start (the flock above says they did not overlap)" >&2
assert_eq "$other" "$leader2" "parent of the new CMD"
((token2 > token1)) || fail "fencing token did not increase: $token1 -> $token2"
is_stopped "$leader" || fail "the old simba is no longer stopped: the kill was not the watchdog's"

# Keep it stopped for 4 s in all, then let it run again.
while (($(now_ms) - t0 < 4000)); do sleep 0.1; done
kill -CONT "$leader"

# It notices the loss and contends again; it does not start its CMD while
# the new leader's CMD runs.
wait_for 5 grep -q "contending for m again" "$T/err.$([[ $leader == "$s1" ]] && echo 1 || echo 2)"
end=$(($(now_ms) + 3000))
while (($(now_ms) < end)); do
  pid_alive "$cmd2" || { cat -- "$log" >&2; fail "the new leader's CMD stopped"; }
  sleep 0.1
done
assert_eq 2 "$(starts "$log")" "CMD starts after the SIGCONT"
check_no_overlap
pid_alive "$leader" || fail "the old simba exited after SIGCONT (lead contends again)"
assert_eq "$token2" "$(mutex_field m fencing_token)" "fencing token in status after SIGCONT"
