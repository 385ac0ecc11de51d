#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# A release from another process wakes MySQL's waiters (the hint lock,
# docs/backends/mysql.md): after `simba acquire` exits, the first waiter
# holds the mutex's hint lock (it found the mutex taken and waits for its
# timer) and the second waits for that lock; `release --lease` and
# `release --force` run in processes of their own, which hold no hint
# lock. The waiters must get in within ~1.5 s each, not at the end of the
# 30 s lease.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/mysql_common.sh"
use_test_mysql

# At least $2 waiters queued on $1.
queued() { (($("$SIMBA" status --mutex "$1" --format json | grep -o '"position"' | wc -l) >= $2)); }

# One round: a 30 s lease, two waiters queued, the release ($2...) from
# this shell; both waiters' CMDs start within 3 s of it.
round() {
  local m=$1 t0 first second
  shift
  "$SIMBA" acquire --mutex "$m" --ttl 30s --env-file "$T/$m.env" || fail "acquire of $m"
  for w in 1 2; do
    "$SIMBA" run --mutex "$m" -q -- sh -c 'date +%s%3N >"$0"' "$T/$m.$w" &
    # Queued in this order (the second waits for the first's hint lock).
    wait_for 10 queued "$m" "$w"
  done
  t0=$(now_ms)
  (set -a && . "$T/$m.env" && "$@") || fail "$* of $m"
  wait_for 3 test -s "$T/$m.1" -a -s "$T/$m.2"
  wait
  first=$(sort -n "$T/$m.1" "$T/$m.2" | head -1)
  second=$(sort -n "$T/$m.1" "$T/$m.2" | tail -1)
  echo "$m: first waiter in $((first - t0)) ms, second $((second - t0)) ms after the release"
  ((first - t0 < 1500)) || fail "$m: the first waiter got in $((first - t0)) ms after the release"
}

round lease sh -c '"$0" release --lease "$SIMBA_LEASE"' "$SIMBA"
round forced sh -c '"$0" release --force --mutex forced' "$SIMBA"

# A chain of hand-overs by the owners' own releases: a waiter the hint
# woke owns the mutex with the hint lock on its hint connection, and its
# release passes it on; the next waiter is never held back by the first
# come, first served second (once each waiter marked itself woken at its
# own release: a second per hand-over).
"$SIMBA" run --mutex chain -- sh -c 'touch "$0"; while [ ! -e "$0.go" ]; do sleep 0.05; done' \
  "$T/chain" &
holder=$!
wait_file "$T/chain" 10
pids=()
for w in 1 2 3 4; do
  "$SIMBA" run --mutex chain -q -- sh -c 'date +%s%3N >>"$0"' "$T/chain.starts" &
  pids+=($!)
  wait_for 10 queued chain "$w"
done
t0=$(now_ms)
touch "$T/chain.go"
wait "$holder" "${pids[@]}" || fail "a run of the chain failed"
took=$(($(sort -n "$T/chain.starts" | tail -1) - t0))
echo "chain: 4 hand-overs in $took ms"
((took < 2000)) || fail "4 hand-overs took $took ms"
