#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd mysql
# Leadership moves away from a failing leader (issue 31 §3): `simba lead
# --restart on-failure` whose CMD keeps failing, and a healthy standby with
# another --contender-id. After a failed run with others waiting, the
# leader hands the mutex over (releases once CMD and all it left are gone,
# and contends again at the back of the queue): the standby's CMD starts
# within one restart of the failing one, and the failing one stays standby
# meanwhile. With nobody waiting, the restart is in place (same lease:
# test_lead_restart). --max-restarts N: the (N+1)-th failed run in a row
# ends simba with CMD's status, the mutex released.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

log=$T/log
waiters() {
  local json
  json=$("$SIMBA" status --mutex "$1" --json) || fail "simba status --mutex $1 --json failed"
  python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(len(m.get("waiters", [])) for m in d.get("mutexes", []) if m["mutex"] == sys.argv[1]))
' "$1" <<<"$json"
}
has_waiter() { (($(waiters "$1") >= 1)); }
count() {
  local n
  n=$(grep -c "^$1 " "$log" 2>/dev/null) || true
  printf '%s\n' "${n:-0}"
}
good_started() { (($(count good) >= 1)); }

# One round: a failing leader under --restart POLICY, then a healthy standby.
hand_over() {
  local policy=$1 mutex=$2
  : >"$log"
  "$SIMBA" lead --mutex "$mutex" --contender-id bad --ttl 2s --transition 1s \
    --restart "$policy" --restart-delay 300ms -- \
    sh -c 'echo "bad $SIMBA_FENCING_TOKEN" >>"$0"; sleep 0.3; exit 3' "$log" \
    2>"$T/bad.$policy.err" &
  bad=$!
  wait_for 10 grep -q '^bad ' "$log"
  "$SIMBA" lead --mutex "$mutex" --contender-id good --ttl 2s --transition 1s -- \
    sh -c 'echo "good $SIMBA_FENCING_TOKEN" >>"$0"; exec sleep 60' "$log" \
    2>"$T/good.$policy.err" &
  good=$!
  wait_for 10 has_waiter "$mutex"
  local before
  before=$(count bad)
  # The run in progress when the standby queued, then at most one restart:
  # ~0.3 s run + 0.3 s delay each; 10 s is far more than that.
  local end=$(($(now_ms) + 10000))
  until good_started; do
    (($(now_ms) < end)) || {
      cat -- "$T/bad.$policy.err" >&2
      fail "--restart $policy: the standby never ran in 10 s ($(count bad) failed runs of the leader)"
    }
    sleep 0.05
  done
  local after
  after=$(count bad)
  echo "--restart $policy: failed runs $before when the standby queued, $after when it ran" >&2
  ((after <= before + 1)) ||
    fail "--restart $policy: the failing leader ran $((after - before)) times more after the standby queued (at most 1)"
  grep -q "handing it over" "$T/bad.$policy.err" ||
    { cat -- "$T/bad.$policy.err" >&2; fail "--restart $policy: no hand-over line"; }
  # The failing one stands by now: no run of it while the healthy one leads.
  sleep 2
  assert_eq "$after" "$(count bad)" "--restart $policy: failed runs while the standby leads"
  pid_alive "$bad" || fail "--restart $policy: the former leader exited instead of standing by"
  assert_eq good "$(mutex_field "$mutex" label)" "--restart $policy: the holder"
  cp -- "$T/bad.$policy.err" "$T/bad.err"
  # The tokens grow: a new lease for the standby, not the failing one's.
  local t_bad t_good
  t_bad=$(grep '^bad ' "$log" | tail -1 | cut -d' ' -f2)
  t_good=$(grep '^good ' "$log" | cut -d' ' -f2)
  ((t_good > t_bad)) || fail "--restart $policy: token $t_good of the standby not above $t_bad"
  kill -TERM "$good" "$bad"
  wait_for 10 pid_dead "$good"
  wait_for 10 pid_dead "$bad"
  { wait "$good" "$bad"; } 2>/dev/null || true
}

hand_over on-failure h1
hand_over always h2

# --- --max-restarts --------------------------------------------------------
: >"$log"
assert_exit 3 timeout 20 "$SIMBA" lead --mutex h3 --ttl 2s --transition 1s \
  --restart on-failure --restart-delay 100ms --max-restarts 2 -- \
  sh -c 'echo "bad $SIMBA_FENCING_TOKEN" >>"$0"; exit 3' "$log"
assert_eq 3 "$(count bad)" "--max-restarts 2: runs (the first and 2 restarts)"
grep -q "max-restarts" "$T/err" || { cat -- "$T/err" >&2; fail "--max-restarts: no line saying why simba ends"; }
assert_eq free "$(mutex_state h3)" "--max-restarts: state of the mutex after simba exited"

# A success starts the count again (--restart always): fail, succeed, fail,
# fail: with --max-restarts 1 the 4th run is the 2nd failure in a row.
printf '3\n0\n3\n3\n0\n' >"$T/codes"
assert_exit 3 timeout 20 "$SIMBA" lead --mutex h4 --ttl 2s --transition 1s \
  --restart always --restart-delay 100ms --max-restarts 1 -- \
  sh -c 'n=$(($(wc -l <"$1") + 1)); echo "run $n" >>"$1"; exit "$(sed -n "${n}p" "$0")"' \
  "$T/codes" "$T/runs"
assert_eq 4 "$(wc -l <"$T/runs")" "--max-restarts 1 --restart always: runs (a success resets the count)"

assert_exit 64 "$SIMBA" lead --mutex h5 --max-restarts -1 --restart on-failure -- true
grep -q "max-restarts" "$T/err" || fail "--max-restarts -1: the error does not name the option"
assert_exit 64 "$SIMBA" lead --mutex h5 --max-restarts 2 -- true
grep -q "max-restarts" "$T/err" || fail "--max-restarts without --restart: the error does not name the option"
