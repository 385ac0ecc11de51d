#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# PostgreSQL killed (kill -9 of the postmaster) under a holder:
#  1. down longer than the lease: the holder's guards fail, its CMD is
#     stopped and simba exits 76; after the restart the next holder's
#     fencing token is larger than every earlier one.
#  2. restarted at once after losing its last writes (the lease row
#     deleted, as a primary restarted with synchronous_commit off, or a
#     promoted standby, may have lost it): the next contender gets no lease
#     while the old holder's CMD may still run (the server-run quarantine),
#     so no two CMDs overlap.
#  3. the same with --slots 2, both slots held and their rows (and the
#     marker's) lost: no new slot lease before the quarantine ends, so the
#     two CMDs of the lost leases never run beside new ones (4 > 2).
#  4. a holder that outlives the restart, killed -9 later: followed when
#     its lease ends, the quarantine having started at a waiter's look.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"

# The four parts run side by side (each mostly waits for a lease or a
# quarantine to end), each in a directory ($T) and on a server of its own,
# which it kills. own_server [PREFIX]: that server (start_own_postgres).
own_server() {
  chmod 711 -- "$T" # the server's user (root: simba-pg) goes through it
  T=$T/$part
  mkdir -p -- "$T"
  start_own_postgres
  export SIMBA_BACKEND="$PG_URI?timeout=500ms${1:+&prefix=$1}"
}

# Short leases throughout. The quarantine lasts the longest lease live before
# the restart, or the one asked for when longer: the contenders of a mutex
# ask for the same terms (docs/backends/postgres.md), which cover a lease whose row was lost
# (2. and 3.: issue 36, the longest lease ever asked for is not kept).

# ---- 1. down longer than the lease ----------------------------------------------
part_down() {
  own_server
  for i in 1 2; do
    "$SIMBA" run --mutex m --ttl 1s --transition 1s -- sh -c 'echo "$SIMBA_FENCING_TOKEN" >>"$0"' "$T/tokens"
  done
  "$SIMBA" run --mutex m --ttl 1s --transition 1s -- \
    sh -c 'echo "$SIMBA_FENCING_TOKEN" >>"$1"; echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' \
    "$T/child.pid" "$T/tokens" &
  holder=$!
  wait_for 10 test -s "$T/child.pid"
  child=$(<"$T/child.pid")
  kill -KILL "$PG_PID"
  t0=$(now_ms)
  wait_for 4 pid_dead "$child"
  dt=$(($(now_ms) - t0))
  rc=0
  wait "$holder" || rc=$?
  assert_eq 76 "$rc" "exit status of the holder whose server went away"
  ((dt < 2000)) || fail "CMD stopped ${dt} ms after the kill: after its transition_at (2 s)"
  echo "CMD stopped ${dt} ms after the kill -9 of the postmaster" >&2
  pg_server_spawn || fail "cannot restart PostgreSQL"

  "$SIMBA" run --mutex m --ttl 1s --transition 1s --timeout 20s -- \
    sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0"' "$T/next"
  next=$(<"$T/next")
  while read -r t; do
    ((next > t)) || fail "token after the restart ($next) is not larger than an earlier one ($t)"
  done <"$T/tokens"
  echo "tokens before: $(tr '\n' ' ' <"$T/tokens")after: $next" >&2
}

# ---- 2. restarted at once, the lease lost ---------------------------------------
part_lost() {
  own_server
  "$SIMBA" run --mutex lost --ttl 3s --transition 1s -- \
    sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$T/child.pid" &
  holder=$!
  wait_for 10 test -s "$T/child.pid"
  child=$(<"$T/child.pid")
  pg_server_sql "DELETE FROM simba_leases WHERE mutex = 'lost'" >/dev/null ||
    fail "cannot delete the lease row"
  kill -KILL "$PG_PID"
  pg_server_spawn || fail "cannot restart PostgreSQL"
  t0=$(now_ms)
  # The contender's CMD says whether the old holder's CMD still ran.
  "$SIMBA" run --mutex lost --ttl 3s --transition 1s --timeout 20s -- \
    sh -c 'if kill -0 "$1" 2>/dev/null; then echo overlap; else echo alone; fi >"$0"' \
    "$T/verdict" "$child" || fail "the contender did not get the mutex after the restart"
  dt=$(($(now_ms) - t0))
  assert_eq alone "$(<"$T/verdict")" "the old holder's CMD when the next one started"
  wait_for 4 pid_dead "$child"
  rc=0
  wait "$holder" || rc=$?
  assert_eq 76 "$rc" "exit status of the holder whose lease was lost"
  echo "the next holder started ${dt} ms after the restart (quarantine: 3 s + 1 s + 1 s)" >&2
  ((dt >= 4500)) || fail "the next holder started ${dt} ms after the restart: before the quarantine ended"
}

# ---- 3. the same with --slots 2 -------------------------------------------------
part_slots() {
  own_server
  pids=()
  for i in 1 2; do
    rm -f -- "$T/slot$i.pid"
    "$SIMBA" run --mutex many --slots 2 --ttl 3s --transition 1s -- \
      sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$T/slot$i.pid" &
    pids+=($!)
    wait_for 10 test -s "$T/slot$i.pid"
  done
  children=("$(<"$T/slot1.pid")" "$(<"$T/slot2.pid")")
  pg_server_sql "DELETE FROM simba_leases WHERE split_part(mutex, '#', 1) = 'many'" >/dev/null ||
    fail "cannot delete the rows of the slots"
  kill -KILL "$PG_PID"
  pg_server_spawn || fail "cannot restart PostgreSQL"
  t0=$(now_ms)
  "$SIMBA" run --mutex many --slots 2 --ttl 3s --transition 1s --timeout 20s -- \
    sh -c 'n=0; for p; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done; echo "$n" >"$0"' \
    "$T/verdict" "${children[@]}" || fail "the contender got no slot after the restart"
  dt=$(($(now_ms) - t0))
  assert_eq 0 "$(<"$T/verdict")" "CMDs of the lost slot leases still running when a new one started"
  for p in "${pids[@]}"; do
    rc=0
    wait "$p" || rc=$?
    assert_eq 76 "$rc" "exit status of a holder whose slot lease was lost"
  done
  echo "the next slot holder started ${dt} ms after the restart (quarantine: 3 s + 1 s + 1 s)" >&2
  ((dt >= 4500)) || fail "the next slot holder started ${dt} ms after the restart: before the quarantine ended"
}

# ---- 4. a holder that outlives the restart, killed later ------------------------
# The restart loses nothing: the holder renews on the new run. A waiter's
# look after the restart starts the quarantine (2 s + 1 s + 1 s: tables of
# their own, whose marker knows no longer lease than these); the
# holder killed -9 once it is over is followed when its lease ends (at most
# ttl + transition, 3 s), not after its lease and a whole quarantine more
# (~7 s: the quarantine started only when the mutex was free).
part_late() {
  own_server late_
  "$SIMBA" run --mutex late --ttl 2s --transition 1s -- \
    sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$T/child.pid" &
  holder=$!
  wait_for 10 test -s "$T/child.pid"
  "$SIMBA" run --mutex late --ttl 2s --transition 1s --timeout 30s -- \
    sh -c 'date +%s%3N >"$0"' "$T/late.start" 2>"$T/late.err" &
  waiter=$!
  sleep 0.5
  kill -KILL "$PG_PID"
  pg_server_spawn || fail "cannot restart PostgreSQL"
  sleep 6
  expect_follow_after_kill "$holder" "$waiter"
}

jobs=()
for part in down lost slots late; do
  "part_$part" &
  jobs+=("$part:$!")
done
for job in "${jobs[@]}"; do
  wait "${job##*:}" || fail "part ${job%:*}: failed (above)"
done
