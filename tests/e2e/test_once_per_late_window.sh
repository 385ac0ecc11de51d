#!/usr/bin/env bash
# backends: sqlite redis postgres mysql etcd
# run --once-per (issue 31 §1): a contender is judged in the window in
# which it first reached the backend, not in the one in which its wait
# ends. Windows of 6 s from a boundary T0 on the backend's clock (here
# this machine's):
#  W1: a plain run holds the mutex past W1's end; host-b of W1 waits, then
#      runs late FOR W1 (its log line and status say so), and host-c of W2
#      still runs W2's run (before: host-b's run took W2 and host-c was
#      told "already ran in this window": W1 never ran, and nothing said so).
#  W3: host-d of W3 waits behind a plain run and is stopped (SIGSTOP) past
#      W3's end; host-e runs W4; host-d, continued, was passed over: it
#      exits 75 with one line naming both windows, running nothing.
# W3 and W4 are the same two windows as W1 and W2, on a mutex of their own
# (cron-w3; windows and runs are per mutex), run beside W1's: 12 s less.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

period=6000
job='echo "$SIMBA_CONTENDER_ID" >>"$0"; sleep 0.3'
once() { "$SIMBA" run --mutex cron --once-per 6s "$@"; }
sleep_until() { # sleep_until EPOCH_MS
  local d=$(($1 - $(now_ms)))
  ((d > 0)) && sleep "$((d / 1000)).$(printf '%03d' $((d % 1000)))"
  return 0
}
utc() { date -u -d "@$(($1 / 1000))" +%Y-%m-%dT%H:%M:%SZ; }

now=$(now_ms)
t0=$((now - now % period + period)) # the next boundary: W1
((t0 - now >= 300)) || t0=$((t0 + period))
sleep_until $((t0 + 100))

# --- W3: host-d is carried past W3's end, and W4 runs meanwhile (in the
# background, on cron-w3, from W1's start: its W3 is W1, its W4 is W2).
w3_part() {
  local w3=$t0 w4=$((t0 + period)) h2 d rc
  timeout -k 5 30 "$SIMBA" run --mutex cron-w3 -- sh -c "echo >'$T/h2.up'; sleep 1" &
  h2=$!
  wait_file "$T/h2.up" 5
  "$SIMBA" run --mutex cron-w3 --once-per 6s --contender-id host-d \
    -- sh -c "$job" "$T/runs.w3" 2>"$T/err.d" &
  d=$!
  wait_for 5 grep -q "waiting for cron-w3" "$T/err.d"
  (($(now_ms) < w4)) || fail "host-d did not reach the backend within W3: test too slow"
  kill -STOP "$d"
  wait "$h2" || fail "the second holder failed"
  sleep_until $((w4 + 300))
  rc=0
  timeout -k 5 30 "$SIMBA" run --mutex cron-w3 --once-per 6s --contender-id host-e \
    -- sh -c "$job" "$T/runs.w3" 2>"$T/err.e" || rc=$?
  kill -CONT "$d"
  assert_eq 0 "$rc" "host-e's exit code ($(cat "$T/err.e"))"
  rc=0
  # host-d looks again at its next retry (at most a few seconds).
  wait_for 15 pid_dead "$d"
  wait "$d" || rc=$?
  assert_eq 75 "$rc" "host-d's exit code ($(cat "$T/err.d"))"
  assert_eq "host-e" "$(cat "$T/runs.w3")" "the runs of W3 and W4"
  grep -q "the window of $(utc "$w3") was passed over: a later window ($(utc "$w4")) already ran on .* (exit 0; contender host-e)" \
    "$T/err.d" || fail "host-d did not say that its window was passed over: $(cat "$T/err.d")"
}
w3_part &
w3=$!

# --- W1: a slow holder carries host-b past its window's end.
timeout -k 5 30 "$SIMBA" run --mutex cron -- sh -c "echo >'$T/h1.up'; sleep 7.4" &
h1=$!
wait_file "$T/h1.up" 5
timeout -k 5 30 "$SIMBA" run --mutex cron --once-per 6s --contender-id host-b \
  -- sh -c "$job" "$T/runs" 2>"$T/err.b" &
b=$!
wait_for 5 grep -q "waiting for cron" "$T/err.b"
(($(now_ms) < t0 + period)) || fail "host-b did not reach the backend within W1: test too slow"
wait "$h1" || fail "the holder failed"
rc=0
wait "$b" || rc=$?
assert_eq 0 "$rc" "host-b's exit code ($(cat "$T/err.b"))"
assert_eq "host-b" "$(cat "$T/runs")" "the runs after host-b"
grep -q "running cron late by .* for the window of $(utc "$t0")" "$T/err.b" ||
  fail "host-b did not say that it ran late for W1: $(cat "$T/err.b")"
"$SIMBA" status --mutex cron >"$T/status" 2>&1 || fail "status: $(cat "$T/status")"
grep -q "window from $(utc "$t0"), started .* (late by .* for the window of $(utc "$t0"))" \
  "$T/status" || fail "status does not show the late run of W1: $(cat "$T/status")"

# host-c of W2 (3 s into it): W2 has not run.
sleep_until $((t0 + period + 3000))
(($(now_ms) < t0 + 2 * period - 1000)) || fail "host-c would fire past W2: test too slow"
assert_exit 0 timeout -k 5 30 "$SIMBA" run --mutex cron --once-per 6s --contender-id host-c \
  -- sh -c "$job" "$T/runs"
assert_eq "host-b host-c" "$(tr '\n' ' ' <"$T/runs" | sed 's/ $//')" "the runs of W1 and W2"

wait "$w3" || fail "the part of W3 and W4 failed (above)"
