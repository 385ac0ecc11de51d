#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# Many first uses at once on new tables: nobody is quarantined. The tables
# simba has just made get a marker of the current run before any lease row
# can be written; a first use whose acquire ran between another's CREATE
# of the leases' table and its marker found no marker, quarantined the
# tables ("in quarantine ... no simba marker of this server run"), and
# every --no-wait run exited 69 (two --slots holders waited 13 s:
# e2e-mysql/test_slots_fifo under load). And an acquire reads the marker
# in the statement that reads its lease row: read by a statement of its
# own before, it was read before another first use wrote it, and the
# leases' table was there by the next statement (1 in 40-120 runs).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/mysql_common.sh"
use_test_mysql
# 10 s, not the default 2 s, for each call: 8 schema scripts at once wait
# for each other's locks, on a machine that CI loads.
base=${SIMBA_BACKEND%%\?*}?timeout=10s

for round in 1 2 3 4 5; do
  pids=()
  for i in {1..8}; do
    # all at once: each waits for the gate (a file), then execs simba
    sh -c 'i=0; while [ ! -e "$0" ] && [ $((i += 1)) -lt 1000 ]; do sleep 0.01; done; exec "$@"' \
      "$T/gate.$round" "$SIMBA" run --backend "$base&prefix=race_$$_${round}_" --mutex "m$i" \
      --no-wait -- true 2>"$T/err.$round.$i" &
    pids+=($!)
  done
  sleep 0.3
  : >"$T/gate.$round"
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" ||
      fail "round $round: simba $((i + 1)) of 8 exits $?: $(cat -- "$T/err.$round.$((i + 1))")"
  done
done
