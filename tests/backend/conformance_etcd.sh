#!/usr/bin/env bash
# ctest's conformance/etcd: the backend conformance suite against the etcd
# cluster named by SIMBA_TEST_ETCD_URI (scripts/test starts one), under a
# key prefix of its own so that runs never see each other's keys.
#
#   bash tests/backend/conformance_etcd.sh build/simba_conformance [doctest args]
#
# Exit 77 (skipped) when the variable is unset. Left out by name: the
# cases of the lease-row model that etcd's queue answers otherwise
# (src/backend/etcd/README.md, "Where it differs"): a lease that ran out,
# or was revoked, goes only when etcd's lease of its key ends (whole
# seconds, up to a second after the lease simba showed: the takeover,
# expired slot, fencing-after-expiry, force_release, fifo and C#3 cases,
# and the lost-event and counter cases that take a lease run out 400 ms
# before: etcd_specific.cpp counts those on etcd's time); a busy acquire
# queues its contender until it leaves (the hold cases, the late waiter);
# a dead waiter keeps its place until its lease ends (the
# first-live-waiter case, and the slots' timed fallback, which lets a
# latecomer past a woken waiter that does not come); a released mutex
# leaves no key (the token-kept and list cases); a waiter watches its
# predecessor, not its own key (the force_release wake-up).
set -euo pipefail
bin=$1
shift
if [[ -z ${SIMBA_TEST_ETCD_URI:-} ]]; then
  echo "etcd tests skipped: SIMBA_TEST_ETCD_URI is not set (scripts/test starts a cluster and sets it)" >&2
  exit 77
fi
export SIMBA_TEST_BACKEND="$SIMBA_TEST_ETCD_URI/conf-$(date +%s)-$$"
echo "conformance against $SIMBA_TEST_BACKEND" >&2
differs='lost: never changes*,lost: one event*,counters: acquisitions*'
differs+=',acquire: after transition_at*,release: only the owner releases*,force_release revokes*,hold: *'
differs+=',fencing tokens strictly increase across*,list: all mutexes*,wake-up: a release by another*'
differs+=',slots: an expired slot*,wake-up: slots: a freed slot goes*'
differs+=',wake-up: a release wakes only*,wake-up: queued behind*,wake-up: fifo:*,inspect: acquire stores*'
exec "$bin" --test-case-exclude="$differs" "$@"
