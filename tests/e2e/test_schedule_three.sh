#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the CMD script
# shellcheck disable=SC2094 # the log is only read here; cat shows it on failure
# backends: sqlite redis postgres etcd mysql
# Three `simba schedule --every 1s` instances on one mutex for ~4 s: only the
# leader runs CMD, so about 4 runs in total (not 12), and never two at once.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

log=$T/log
# CMD: "start NS PID TOKEN", 0.2 s of work, "end NS PID". It holds an
# exclusive flock on $T/excl while it lives: a run that starts while another
# is still alive records OVERLAP (exact, the kernel orders it).
cat >"$T/cmd.sh" <<'EOF'
log=$1 dir=$2
exec 9>>"$dir/excl"
flock -n 9 || echo "OVERLAP $$ $(date +%s%N)" >>"$log"
echo "start $(date +%s%N) $$ $SIMBA_FENCING_TOKEN" >>"$log"
sleep 0.2
echo "end $(date +%s%N) $$" >>"$log"
EOF

# The backend's first use (SQL tables made, on a loaded machine seconds of
# DDL) before the ~4 s that count runs.
"$SIMBA" run --mutex warm-up -- true || fail "no first use"
declare -a simbas
for i in 1 2 3; do
  "$SIMBA" schedule --mutex s --every 1s --ttl 3s --transition 2s -- \
    sh "$T/cmd.sh" "$log" "$T" 2>"$T/err.$i" &
  simbas+=("$!")
done
sleep 4
for p in "${simbas[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${simbas[@]}"; do wait_for 5 pid_dead "$p"; done
for p in "${simbas[@]}"; do
  rc=0
  wait "$p" || rc=$?
  # 128+15 with no run in progress; a run in progress gets the TERM too
  # (sh dies of it: 143).
  assert_eq 143 "$rc" "exit status of simba schedule $p after SIGTERM"
done

runs=$(grep -c '^start ' "$log") || true
echo "$runs runs in ~4 s; per instance:" >&2
for i in 1 2 3; do echo "  err.$i: $(grep -c 'acquired s' "$T/err.$i" || true) acquisitions" >&2; done
((runs >= 3 && runs <= 6)) || { cat -- "$log" >&2; fail "$runs runs in ~4 s with --every 1s (expected about 4)"; }

if grep -q '^OVERLAP' "$log"; then
  cat -- "$log" >&2
  fail "a run started while another was still running"
fi

# The same from the timestamps: every run ends before the next one starts.
# The log is appended in time order (O_APPEND, one writer at a time if no
# overlap); a run that SIGTERM cut short has no end line and must be last.
prev_end='' prev_pid='' open=''
while read -r kind ns pid _; do
  case $kind in
  start)
    [[ -z $open ]] || { cat -- "$log" >&2; fail "run $pid started while run $open was running"; }
    if [[ -n $prev_end ]] && ((ns <= prev_end)); then
      cat -- "$log" >&2
      fail "run $pid started before run $prev_pid ended"
    fi
    open=$pid
    ;;
  end)
    [[ $pid == "$open" ]] || { cat -- "$log" >&2; fail "end of run $pid, which is not the running one ($open)"; }
    open='' prev_end=$ns prev_pid=$pid
    ;;
  esac
done <"$log"

# Runs of one leader are 1 s apart (fixed rate), not back to back.
prev=
while read -r _ ns _; do
  if [[ -n $prev ]]; then
    gap=$(((ns - prev) / 1000000))
    ((gap >= 700)) || { cat -- "$log" >&2; fail "two runs ${gap} ms apart with --every 1s"; }
  fi
  prev=$ns
done < <(grep '^start ' "$log")
