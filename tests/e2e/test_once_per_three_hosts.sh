#!/usr/bin/env bash
# backends: sqlite redis postgres
# run --once-per: three "hosts" (separate simba processes, each its own
# --contender-id) fire the same 0.4 s job at 0.1 s, 0.9 s and 4.6 s into
# each of 3 windows of 6 s (the issue's 0/2/9 s into windows of 10 s with a
# 1 s job, scaled down): exactly one run per window, and the late ones exit
# 75 saying where and when it ran. Windows are multiples of 6 s on the
# backend's clock (here the same machine's clock). The last host fires 1.4 s
# before its window ends: with 4 s windows and 0.4 s left, a loaded machine
# (CI) started it in the next window, where it ran again.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

period=6000
job="echo run >>'$T/runs'; sleep 0.4"
fire() { # fire HOST DELAY_MS WINDOW
  sleep "$(($2 / 1000)).$(printf "%03d" $(($2 % 1000)))"
  local rc=0
  timeout -k 5 20 "$SIMBA" run --mutex cron --once-per 6s --contender-id "$1" \
    -- sh -c "$job" >"$T/out.$1.$3" 2>"$T/err.$1.$3" || rc=$?
  echo "$rc" >"$T/rc.$1.$3"
}

# Start at the next window boundary, plus 100 ms of slack.
now=$(now_ms)
sleep_ms=$((period - now % period + 100))
sleep "$((sleep_ms / 1000)).$(printf '%03d' $((sleep_ms % 1000)))"
for w in 1 2 3; do
  start=$(now_ms)
  fire host-a 0 "$w" &
  fire host-b 800 "$w" &
  fire host-c 4500 "$w" &
  wait
  # on to the next boundary (+100 ms)
  now=$(now_ms)
  left=$((period - now % period + 100))
  ((left < period)) || left=$((left - period))
  sleep "$((left / 1000)).$(printf '%03d' $((left % 1000)))"
done

runs=$(wc -l <"$T/runs")
if [[ $runs != 3 ]]; then
  for f in "$T"/err.*; do echo "--- $f: $(cat "$f")"; done >&2
  fail "expected exactly 3 runs in 3 windows, got $runs"
fi
for w in 1 2 3; do
  assert_eq 0 "$(cat "$T/rc.host-a.$w")" "host-a (first in window $w)"
  for h in host-b host-c; do
    assert_eq 75 "$(cat "$T/rc.$h.$w")" "$h (late in window $w)"
    grep -q "already ran in this window on .* at .* (exit 0; contender host-a)" "$T/err.$h.$w" ||
      fail "$h in window $w did not say where the job ran: $(cat "$T/err.$h.$w")"
  done
done
