#!/usr/bin/env bash
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

source "$(dirname -- "${BASH_SOURCE[0]}")/fifo_common.sh"

"$SIMBA" run --mutex warm "${fifo_terms[@]}" -- true
for round in 1 2; do
  fifo_hold "restart$round" "$round"
  fifo_queue "restart$round"
  kill -KILL "$holder"
  { wait "$holder"; } 2>/dev/null || true # no "Killed" job notice
  kill -KILL "$PG_PID"
  wait "$PG_PID" 2>/dev/null || true
  pg_server_spawn || fail "cannot restart PostgreSQL"
  fifo_ran_in_order "after the restart, round $round"
done
