#!/usr/bin/env bash
# FIFO through a PostgreSQL restart (issue 31 §4): three waiters queue one
# after the other; the holder's simba is killed -9 and the postmaster too,
# which is started again at once. Every waiter's session is gone: each
# queues again with its first queued_at (statements.cpp: k_enqueue),
# whoever reconnects first, and when the quarantine of the new server run
# ends only the first live waiter may take the mutex (core/fifo.hpp): the
# CMDs run in the order w1 w2 w3. A server of the test's own.
#
# The order holds among the waiters queued again (docs/design.md §3): one
# still in its back-off (at most 5 s apart) when the quarantine ends, or
# when w1's release wakes the next, is passed over. With fifo_terms the
# quarantine (ttl + transition + 1 s) was 3 s, shorter than that: a waiter
# that reached the server late ran after the one behind it ("w1 w3 w2", CI
# on a loaded host). So the holder takes a lease whose ttl (8 s) outlasts
# the waiters' back-off, and the test sees all three queued again, in their
# first order, while that lease still runs: a waiter queues again as soon
# as it reaches the server again (it waited for its LISTEN's retry, and so
# for its next timed try, at the lease's end: pg/wakeups.hpp
# server_answered).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
needs jq

source "$(dirname -- "${BASH_SOURCE[0]}")/fifo_common.sh"

# MUTEX: still held by the killed holder's lease, and the waiters' simbas
# queued in the order they first came (${pids[@]}) -- or, on a machine so
# loaded that the checks came late, already held by the first of them with
# the other two queued behind it in order (the lease ran out meanwhile).
queued_again_in_order() {
  "$SIMBA" status --mutex "$1" --format json >"$T/status.json" || return 1
  local state queue holder
  state=$(jq -r '.mutexes[0].state' "$T/status.json")
  holder=$(jq -r '.mutexes[0].holders[0].pid // ""' "$T/status.json")
  queue=$(jq -r '.mutexes[0].waiters // [] | sort_by(.position) | map(.pid) | join(" ")' \
    "$T/status.json")
  echo "state $state, holder [$holder], queue [$queue], waiters [${pids[*]}]"
  [[ $state == held ]] || return 1
  [[ $queue == "${pids[*]}" ]] ||
    [[ $holder == "${pids[0]}" && $queue == "${pids[*]:1}" ]]
}

# The two rounds run side by side, each in a directory ($T) and on a server
# of its own, which it kills.
one_round() {
  local round=$1
  chmod 711 -- "$T" # the server's user (root: simba-pg) goes through it
  T=$T/round$round
  mkdir -p -- "$T"
  start_own_postgres
  export SIMBA_BACKEND="$PG_URI?timeout=500ms"
  "$SIMBA" run --mutex warm "${fifo_terms[@]}" -- true
  fifo_hold "restart$round" "$round" --ttl 8s --transition 1s
  fifo_queue "restart$round"
  kill -KILL "$holder"
  { wait "$holder"; } 2>/dev/null || true # no "Killed" job notice
  kill -KILL "$PG_PID"
  wait "$PG_PID" 2>/dev/null || true
  pg_server_spawn || fail "cannot restart PostgreSQL"
  wait_for 12 queued_again_in_order "restart$round"
  fifo_ran_in_order "after the restart, round $round"
}
rounds=()
for round in 1 2; do
  one_round "$round" &
  rounds+=($!)
done
for round in 1 2; do
  wait "${rounds[round - 1]}" || fail "round $round failed (above)"
done
