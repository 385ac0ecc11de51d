#!/usr/bin/env bash
# backends: sqlite
# --slots on SQLite: a waiter that a busy host preempted while it joined the
# queue (between the time in its queue file's name and its write to the
# file) is still woken by the next slot's release, and takes that slot at
# once. A release skips waiters that an earlier release woke, and told them
# by a file mtime later than the name's: the slow joiner's own write made
# it look woken, the release woke nobody, and the waiter slept until its
# --timeout (CI on a loaded host: e2e/test_slots_acquire). And a slot
# freed while a waiter joins (after its acquire found both held, before its
# file is in the queue) woke nobody; the waiter looks once queued. It did
# not: the look after queueing looked at the mutex's marker, held while
# any slot is. SIMBA_TEST_QUEUE_PAUSE_MS is that preemption.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

acquire() { "$SIMBA" acquire --mutex jobs --slots 2 --ttl 30s "$@"; }

assert_exit 0 acquire --env-file "$T/a.env"
assert_exit 0 acquire --env-file "$T/b.env"
(
  rc=0
  SIMBA_TEST_QUEUE_PAUSE_MS=150 acquire --timeout 8s --env-file "$T/c.env" 2>"$T/c.err" || rc=$?
  echo "$rc" >"$T/c.done"
) &
queued() { "$SIMBA" status --mutex jobs --format json | grep -q '"position"'; }
wait_for 10 queued

# Within the second after the joining (core/slots.hpp: k_slot_fallback_ms,
# after which an old wake no longer counts): the release must wake it.
released_at=$(now_ms)
(set -a && . "$T/b.env" && "$SIMBA" release --lease "$SIMBA_LEASE") || fail "release of job B"
wait_line "$T/c.done" 10
assert_eq 0 "$(<"$T/c.done")" "the slow joiner's acquire (stderr: $(<"$T/c.err"))"
took=$(($(now_ms) - released_at))
((took < 4000)) || fail "the slow joiner took ${took} ms after the release: not woken"

# Job D: its acquire finds both slots held (A's, C's), and job C ends while
# D joins the queue (800 ms of it).
(
  rc=0
  SIMBA_TEST_QUEUE_PAUSE_MS=800 acquire --timeout 8s --env-file "$T/d.env" 2>"$T/d.err" || rc=$?
  echo "$rc" >"$T/d.done"
) &
wait_for 10 grep -q "waiting for jobs" "$T/d.err"
released_at=$(now_ms)
(set -a && . "$T/c.env" && "$SIMBA" release --lease "$SIMBA_LEASE") || fail "release of job C"
wait_line "$T/d.done" 10
assert_eq 0 "$(<"$T/d.done")" "the acquire of the job that was joining (stderr: $(<"$T/d.err"))"
took=$(($(now_ms) - released_at))
((took < 4000)) || fail "the joining job took ${took} ms after the release: no look once queued"
(set -a && . "$T/a.env" && "$SIMBA" release --lease "$SIMBA_LEASE") || fail "release of job A"
(set -a && . "$T/d.env" && "$SIMBA" release --lease "$SIMBA_LEASE") || fail "release of job D"
