#!/usr/bin/env bash
# backends: sqlite redis postgres redis-cluster mysql etcd
# run --once-per: a host that arrives while the window's run is going waits
# for it, then exits with the conflict code without running CMD, saying
# where it ran; with --no-wait it exits at once. The window (1 day) starts
# an hour back (--offset), so that the test never crosses a boundary.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

day=86400000
offset=$(((($(now_ms) - 3600000) % day + day) % day))
once() { timeout -k 5 30 "$SIMBA" run --mutex job --once-per 1d --offset "${offset}ms" "$@"; }

once --contender-id host-a -- sh -c "echo a >>'$T/runs'; sleep 2; echo >'$T/a.done'" &
wait_line "$T/runs" 10

t0=$(now_ms)
assert_exit 75 once --contender-id host-b --no-wait -- sh -c "echo b >>'$T/runs'"
(($(now_ms) - t0 < 1000)) || fail "--no-wait waited for the run in progress"
[[ ! -e $T/a.done ]] || fail "the run ended before --no-wait was tried: test too slow"

# Two hosts wait; the end of the run tells both at once (not one, leaving
# the other to its timer, seconds later).

(once --contender-id host-d -- sh -c "echo d >>'$T/runs'" 2>"$T/err.d" || echo $? >"$T/rc.d") &
assert_exit 75 once --contender-id host-c -- sh -c "echo c >>'$T/runs'"
[[ -e $T/a.done ]] || fail "host-c exited before the window's run had ended"
grep -q "already ran in this window on .* (exit 0; contender host-a)" "$T/err" ||
  fail "host-c did not say where the job ran: $(cat "$T/err")"
t_c=$(now_ms)
wait
(($(now_ms) - t_c < 1500)) || fail "host-d learnt of the end of the run $(($(now_ms) - t_c)) ms after host-c"
assert_eq 75 "$(cat "$T/rc.d" 2>/dev/null)" "host-d's exit code"
assert_eq "a" "$(tr '\n' ' ' <"$T/runs" | sed 's/ $//')" "the runs"
