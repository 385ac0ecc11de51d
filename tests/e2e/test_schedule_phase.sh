#!/usr/bin/env bash
# backends: sqlite redis postgres etcd mysql
# schedule keeps its phase across hand-overs: each run's start is recorded
# with the mutex, and a new leader waits for the next tick after the last
# run instead of running at once. --align: fixed-rate ticks fall on
# multiples of --every on the backend's clock (here this machine's clock).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

# A duration as simba prints it (850ms, 3.413s, 1m2.5s) in milliseconds.
duration_ms() {
  [[ $1 =~ ^([0-9]+)ms$ ]] && { echo "${BASH_REMATCH[1]}"; return; }
  [[ $1 =~ ^(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)(\.([0-9]+))?s)?$ ]] || fail "not a duration: $1"
  local h=${BASH_REMATCH[2]:-0} m=${BASH_REMATCH[4]:-0} s=${BASH_REMATCH[6]:-0}
  local frac=${BASH_REMATCH[8]}000
  echo $((((h * 60 + m) * 60 + s) * 1000 + 10#${frac:0:3}))
}

# CMD: appends its start time (ms) to the file $0.
RUN='echo "$(($(date +%s%N) / 1000000))" >>"$0"'

# --- --align (checked at the end; it runs beside the two parts below, on
# a mutex of its own): every run on a multiple of --every ------------------
timeout 30 "$SIMBA" schedule --mutex aligned --every 2s --align --max-runs 3 \
  -- sh -c "$RUN" "$T/aligned.log" 2>"$T/aligned.err" &
aligned=$!

# --- the leader stopped right after a run: the standby waits for the tick --
"$SIMBA" schedule --mutex phase --every 4s --contender-id host-a -- sh -c "$RUN" "$T/a.log" \
  2>"$T/a.err" &
a=$!
wait_line "$T/a.log" 10
"$SIMBA" schedule --mutex phase --every 4s --contender-id host-b -- sh -c "$RUN" "$T/b.log" \
  2>"$T/b.err" &
b=$!
sleep 0.3
kill -TERM "$a" # a release: the standby takes over at once
wait_line "$T/b.log" 10
first_a=$(head -n1 "$T/a.log")
first_b=$(head -n1 "$T/b.log")
gap=$((first_b - first_a))
echo "the standby's first run came ${gap} ms after the leader's last run" >&2
# The standby's plan, exactly: the last run's start as recorded (simba's,
# before it forked CMD) plus its wait is the tick, 4 s after that start.
plan=$(grep -o "the last run started .* ago; the next one in .*" "$T/b.err") ||
  fail "the standby did not say when it runs: $(cat "$T/b.err")"
ago=$(sed -E 's/the last run started (.*) ago;.*/\1/' <<<"$plan")
next=$(sed -E 's/.*the next one in (.*)$/\1/' <<<"$plan")
tick=$(($(duration_ms "$ago") + $(duration_ms "$next")))
((tick >= 3950 && tick <= 4050)) || fail "the standby planned its run ${tick} ms after the last ($plan)"
# And it ran then. Measured from CMD's own clock, which starts a fork and
# an exec after simba's record: on a busy machine the leader's CMD came
# up to 0.6 s after it (CI), so the bound below is 3.2 s, not 4.
((gap >= 3200)) || fail "the standby ran ${gap} ms after the last run (expected the next tick, 4 s)"
((gap <= 6000)) || fail "the standby ran ${gap} ms after the last run (expected about 4 s)"
kill -TERM "$b" 2>/dev/null || true
wait "$a" "$b" || true

# --- the same after a SIGKILL: the lease runs out (1.5 s), the tick (4 s) --
"$SIMBA" schedule --mutex killed --every 4s --ttl 1s --transition 500ms --contender-id host-a \
  -- sh -c "$RUN" "$T/ka.log" 2>/dev/null &
a=$!
wait_line "$T/ka.log" 10
"$SIMBA" schedule --mutex killed --every 4s --ttl 1s --transition 500ms --contender-id host-b \
  -- sh -c "$RUN" "$T/kb.log" 2>/dev/null &
b=$!
sleep 0.2
kill -KILL "$a"
wait_line "$T/kb.log" 10
gap=$(($(head -n1 "$T/kb.log") - $(head -n1 "$T/ka.log")))
echo "after a SIGKILL, the standby's first run came ${gap} ms after the last run" >&2
((gap >= 3200 && gap <= 6000)) ||
  fail "after a SIGKILL the standby ran ${gap} ms after the last run (expected about 4 s)"
kill -TERM "$b"
wait "$a" "$b" || true

rc=0
wait "$aligned" || rc=$?
assert_eq 0 "$rc" "schedule --align --max-runs 3 ($(<"$T/aligned.err"))"
assert_eq 3 "$(wc -l <"$T/aligned.log")" "runs with --align"
while read -r at; do
  off=$((at % 2000))
  ((off < 400)) || fail "a run with --every 2s --align started ${off} ms after a multiple of 2 s"
done <"$T/aligned.log"

# --align needs fixed-rate, and excludes --initial-delay.
assert_exit 64 "$SIMBA" schedule --mutex x --every 2s --align --strategy fixed-delay -- true
assert_exit 64 "$SIMBA" schedule --mutex x --every 2s --align --initial-delay 1s -- true
