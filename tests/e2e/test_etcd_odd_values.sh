#!/usr/bin/env bash
# backends: sqlite
# Keys of simba's prefix whose values are not what simba writes (another
# program, an older simba, a hand with etcdctl): a history record whose
# open lease is a number, an event whose name is a number. Each made every
# run, acquire, status and history of the mutex exit 125 ("internal error:
# [json.exception.type_error...]"); they are read as missing fields now,
# and the mutex works. A gateway that answers {"kvs":[1]} or keys that are
# numbers: exit 69, never 125 (hostile_server.py's http mode).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/hostile_common.sh"
needs_backend etcd
needs etcdctl
prefix=odd-$$-$RANDOM
export SIMBA_BACKEND="$SIMBA_TEST_ETCD_URI/$prefix?timeout=2s"
members=${SIMBA_TEST_ETCD_URI#etcd://}
members=${members%%/*}
ctl() { timeout -k 2 5 env ETCDCTL_API=3 etcdctl --endpoints="$members" "$@" >/dev/null; }

assert_exit 0 "$SIMBA" run --mutex m -- true
ctl put "$prefix/!e/m" '{"a":1,"l":0,"open":{"5":7},"s":2}' || fail "etcdctl put"
ctl put "$prefix/!h/m|0000001" '{"e":5,"o":[],"r":{},"h":1}' || fail "etcdctl put"
assert_exit 0 "$SIMBA" run --mutex m -- sh -c 'echo ran'
grep -q ran "$T/out" || fail "CMD did not run"
assert_exit 0 "$SIMBA" status --mutex m
assert_exit 0 "$SIMBA" status --all
assert_exit 0 "$SIMBA" history --mutex m
assert_exit 0 "$SIMBA" history

# A gateway that lies about the shape of its answers.
for body in '{"kvs":[1]}' '{"kvs":[{"key":5,"value":[]}]}' '{"responses":"x","succeeded":"yes"}'; do
  hostile_start http "$body" stall
  for c in status history; do
    rc=0
    timeout -k 2 20 "$SIMBA" "$c" --backend "etcd://127.0.0.1:$HOSTILE_PORT?timeout=1s" \
      >/dev/null 2>"$T/err" || rc=$?
    [[ $rc != 125 ]] || fail "$c against a gateway answering $body: 125: $(<"$T/err")"
  done
  rc=0
  timeout -k 2 20 "$SIMBA" run --timeout 1s --backend "etcd://127.0.0.1:$HOSTILE_PORT?timeout=1s" \
    --mutex m -- touch "$T/ran" 2>"$T/err" || rc=$?
  [[ $rc != 125 ]] || fail "run against a gateway answering $body: 125: $(<"$T/err")"
  hostile_stop
done
