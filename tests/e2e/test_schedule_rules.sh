#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd mysql
# The scheduling rules of `simba schedule` (one instance):
#   fixed-rate: a tick that finds the previous run still running is skipped
#     (and logged); runs never overlap; the next run waits for the next tick.
#   fixed-delay: D between the end of one run and the start of the next.
#   --initial-delay: the first run waits that long after becoming leader.
#   a failing CMD does not stop the schedule; simba exits with the last status.
#   usage errors: exit 64 with one 'simba: error:' line.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

# CMD used below: sh -c "$RUN" LOG SECONDS STATUS
# appends "start NS" and "end NS", sleeps SECONDS in between, exits STATUS.
RUN='echo "start $(date +%s%N)" >>"$0"; sleep "$1"; echo "end $(date +%s%N)" >>"$0"; exit "$2"'

# check_runs LOG N: N runs, each ended, none overlapping; sets the arrays
# starts[] and ends[] (ns).
check_runs() {
  local log=$1 n=$2 kind ns i
  starts=() ends=()
  while read -r kind ns; do
    case $kind in
    start) starts+=("$ns") ;;
    end) ends+=("$ns") ;;
    esac
  done <"$log"
  assert_eq "$n" "${#starts[@]}" "$log: runs"
  assert_eq "$n" "${#ends[@]}" "$log: ended runs"
  for ((i = 0; i < n; i++)); do
    ((starts[i] < ends[i])) || { cat -- "$log" >&2; fail "$log: run $i ends before it starts"; }
    if ((i > 0)) && ((starts[i] <= ends[i - 1])); then
      cat -- "$log" >&2
      fail "$log: run $i started before run $((i - 1)) ended (overlap)"
    fi
  done
}

# --- fixed-rate: a 1.2 s run every 1 s ------------------------------------
assert_exit 0 timeout 30 "$SIMBA" schedule --mutex s1 --ttl 3s --transition 2s \
  --every 1s --max-runs 3 -- sh -c "$RUN" "$T/rate.log" 1.2 0
check_runs "$T/rate.log" 3
grep -q "tick skipped" "$T/err" || { cat -- "$T/err" >&2; fail "fixed-rate: no 'tick skipped' on stderr"; }
for i in 1 2; do
  gap=$(((starts[i] - starts[i - 1]) / 1000000))
  since0=$(((starts[i] - starts[0]) / 1000000))
  idle=$(((starts[i] - ends[i - 1]) / 1000000))
  echo "fixed-rate: run $i started ${gap} ms after run $((i - 1)) (${since0} ms after run 0), ${idle} ms after it ended" >&2
  # The tick at +1 s is skipped; the run waits for the tick at +2 s instead
  # of starting as soon as the previous one ended (+1.2 s). Counted from
  # run 0 (the ticks' grid): a run that started late (a loaded machine)
  # brings the next one no closer to its own. Bounds with slack.
  ((since0 >= i * 2000 - 300)) || fail "fixed-rate: run $i started ${since0} ms after run 0 (expected the ticks, +$((2 * i)) s)"
  ((idle >= 200)) || fail "fixed-rate: run $i started ${idle} ms after run $((i - 1)) ended (expected the next tick, ~+0.8 s)"
  ((gap <= 3000)) || fail "fixed-rate: run $i started ${gap} ms after run $((i - 1)) (expected the next tick, +2 s)"
done
assert_eq free "$(mutex_state s1)" "fixed-rate: state after --max-runs"

# The default strategy is fixed-rate: same skip.
assert_exit 0 timeout 30 "$SIMBA" schedule --mutex s1 --ttl 3s --transition 2s \
  --every 500ms --max-runs 2 -- sh -c "$RUN" "$T/default.log" 0.7 0
check_runs "$T/default.log" 2
grep -q "tick skipped" "$T/err" || { cat -- "$T/err" >&2; fail "default strategy: no 'tick skipped' on stderr"; }

# --- fixed-delay: 500 ms from one end to the next start ----------------------
assert_exit 0 timeout 30 "$SIMBA" schedule --mutex s2 --ttl 3s --transition 2s \
  --strategy fixed-delay --every 500ms --max-runs 3 -- sh -c "$RUN" "$T/delay.log" 0.3 0
check_runs "$T/delay.log" 3
for i in 1 2; do
  gap=$(((starts[i] - ends[i - 1]) / 1000000))
  echo "fixed-delay: run $i started ${gap} ms after run $((i - 1)) ended" >&2
  ((gap >= 450)) || fail "fixed-delay --every 500ms: run $i started ${gap} ms after the previous run ended"
  ((gap <= 2000)) || fail "fixed-delay --every 500ms: run $i started ${gap} ms after the previous run ended"
done
! grep -q "tick skipped" "$T/err" || fail "fixed-delay: a tick was skipped"

# --- --initial-delay --------------------------------------------------------
t0=$(date +%s%N)
assert_exit 0 timeout 30 "$SIMBA" schedule --mutex s3 --ttl 3s --transition 2s \
  --every 1s --initial-delay 1s --max-runs 1 -- sh -c "$RUN" "$T/initial.log" 0 0
check_runs "$T/initial.log" 1
gap=$(((starts[0] - t0) / 1000000))
echo "--initial-delay 1s: first run ${gap} ms after simba started" >&2
((gap >= 900)) || fail "--initial-delay 1s: the first run started ${gap} ms after simba started"
((gap <= 4000)) || fail "--initial-delay 1s: the first run started ${gap} ms after simba started"

# Without it the first run starts at once (so the check above means something).
# Another mutex: on s3 the run above is the last one, and a new leader waits
# for the next tick after it (test_schedule_phase.sh).
t0=$(date +%s%N)
assert_exit 0 timeout 30 "$SIMBA" schedule --mutex s3-fresh --ttl 3s --transition 2s \
  --every 1s --max-runs 1 -- sh -c "$RUN" "$T/noinitial.log" 0 0
check_runs "$T/noinitial.log" 1
gap=$(((starts[0] - t0) / 1000000))
((gap < 900)) || fail "no --initial-delay: the first run started ${gap} ms after simba started"

# --- a failing CMD does not stop the schedule ---------------------------------
assert_exit 2 timeout 30 "$SIMBA" schedule --mutex s4 --ttl 3s --transition 2s \
  --every 300ms --max-runs 3 -- sh -c "$RUN" "$T/fail.log" 0 2
check_runs "$T/fail.log" 3
assert_eq 3 "$(grep -c "command exited with status 2" "$T/err")" "failing CMD: logged statuses"
assert_eq free "$(mutex_state s4)" "failing CMD: state after --max-runs"

# The status is the last run's: fail, fail, succeed -> 0.
assert_exit 0 timeout 30 "$SIMBA" schedule --mutex s4 --ttl 3s --transition 2s \
  --every 300ms --max-runs 3 -- \
  sh -c 'n=$(($(cat "$0" 2>/dev/null || echo 0) + 1)); echo $n >"$0"; [ $n -ge 3 ] || exit 2' "$T/count"
assert_eq 3 "$(<"$T/count")" "fail, fail, succeed: runs"

# --- usage errors ----------------------------------------------------------------
usage_error() {
  assert_exit 64 timeout 10 "$SIMBA" schedule --mutex s5 "$@" -- touch "$T/ran"
  [[ ! -s $T/out ]] || fail "schedule $*: output on stdout"
  assert_eq 1 "$(wc -l <"$T/err")" "schedule $*: lines on stderr"
  grep -q '^simba: error: ' "$T/err" || { cat -- "$T/err" >&2; fail "schedule $*: no 'simba: error:' line"; }
  [[ ! -e $T/ran ]] || fail "schedule $*: CMD ran"
}
usage_error --every 0
usage_error --every 0s
usage_error --every 1s --strategy bogus
usage_error
usage_error --every abc
usage_error --every 1s --initial-delay xyz
assert_eq free "$(mutex_state s5)" "state after the usage errors"
