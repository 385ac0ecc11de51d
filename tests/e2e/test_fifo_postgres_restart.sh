#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# FIFO through a PostgreSQL restart (issue 31 §4): three waiters queue one
# after the other; the holder's simba is killed -9 and the postmaster too,
# which is started again at once. Every waiter's session is gone: each
# queues again with its first queued_at (statements.cpp: k_enqueue),
# whoever reconnects first, and when the quarantine of the new server run
# ends only the first live waiter may take the mutex (core/fifo.hpp): the
# CMDs run in the order w1 w2 w3. A server of the test's own.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
start_own_postgres
export SIMBA_BACKEND="$PG_URI?timeout=500ms"

export ORDER
cmd='echo "$0" >>"$ORDER"; sleep 0.2'
terms=(--ttl 1s --transition 1s)
"$SIMBA" run --mutex warm "${terms[@]}" -- true
for round in 1 2; do
  ORDER=$T/order.$round
  mutex=restart$round
  "$SIMBA" run --mutex "$mutex" "${terms[@]}" -- \
    sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$T/holder.$round" &
  holder=$!
  wait_for 10 test -s "$T/holder.$round"
  queued() {
    (($("$SIMBA" status --mutex "$mutex" --format json | grep -o '"position"' | wc -l) == $1))
  }
  pids=()
  for w in 1 2 3; do
    "$SIMBA" run --mutex "$mutex" "${terms[@]}" --timeout 30s -- sh -c "$cmd" "w$w" \
      2>>"$T/waiters.err" &
    pids+=($!)
    wait_for 10 queued "$w"
    sleep 0.1
  done
  kill -KILL "$holder"
  { wait "$holder"; } 2>/dev/null || true # no "Killed" job notice
  kill -KILL "$PG_PID"
  wait "$PG_PID" 2>/dev/null || true
  pg_server_spawn || fail "cannot restart PostgreSQL"
  for p in "${pids[@]}"; do wait "$p" || fail "a waiter exited $? (round $round)"; done
  got=$(tr '\n' ' ' <"$ORDER")
  assert_eq "w1 w2 w3 " "$got" "the order in which the waiters ran after the restart, round $round"
done
