#!/usr/bin/env bash
# 24 simba started at once on one mutex (CMD `true`): each release wakes
# the next waiter, none waits for its timer (--ttl 30s: a waiter whose
# wake-up went astray sleeps until the lease it saw ends, over 30 s; all
# 24 take about a second). A release's own place in the queue goes with
# it: left afterwards by its simba, it was still there when the next owner
# released (a short CMD, a busy machine), and that release woke the one
# who was leaving instead of a waiter.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
use_test_postgres
# A connection's 2 s (the default timeout) is short for 24 SCRAM logins at
# once on a machine that CI loads: what is tested is the wake-ups, not that.
SIMBA_BACKEND+='&timeout=5s'
for round in 1 2 3 4 5 6 7 8; do
  pids=()
  for i in {1..24}; do
    # all at once: each waits for the gate (a file), then execs simba
    sh -c 'i=0; while [ ! -e "$0" ] && [ $((i += 1)) -lt 1000 ]; do sleep 0.01; done; exec "$@"' \
      "$T/gate.$round" "$SIMBA" run --mutex "m$round" --ttl 30s --timeout 60s -- true \
      2>"$T/err.$round.$i" &
    pids+=($!)
  done
  sleep 0.3
  start=$(now_ms)
  : >"$T/gate.$round"
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || fail "round $round, simba $((i + 1)) exits $?: $(cat -- "$T/err.$round.$((i + 1))")"
  done
  took=$(($(now_ms) - start))
  ((took < 20000)) || fail "round $round took $took ms: a waiter slept until its timer"
done
