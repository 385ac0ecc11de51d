#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# Redis restarted from a snapshot that misses the newest lease (issue 12 §2):
# A acquires and releases; SAVE; B acquires (--ttl 4s) and runs; redis is
# killed (-9) and restarted on the dump, which still has the mutex's fence
# but not B's lease. C must not start while B's CMD can run (the server run
# changed: quarantine), and the tokens keep increasing.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis # skips like the others when Redis tests are off
start_own_redis
export SIMBA_BACKEND=$OWN_REDIS_URI

# A (the server just started is marked new: no quarantine before A's lease;
# the dump keeps that marker of the first run).
assert_exit 0 "$SIMBA" doctor --init
"$SIMBA" run --mutex m --ttl 2s --transition 1s -- sh -c 'echo "$SIMBA_FENCING_TOKEN" >>"$0"' "$T/tokens"
assert_eq "+OK" "$(redis_cmd SAVE)" "SAVE"

# B: a heartbeat every 50 ms while its CMD runs.
"$SIMBA" run --mutex m --ttl 4s -- sh -c \
  'echo "$SIMBA_FENCING_TOKEN" >>"$0"; echo $$ >"$1.tmp"; mv "$1.tmp" "$1"
   while :; do date +%s%3N >>"$2"; sleep 0.05; done' "$T/tokens" "$T/b.pid" "$T/b.beats" &
holder=$!
wait_for 10 test -s "$T/b.pid"
b_cmd=$(<"$T/b.pid")
wait_for 5 test -s "$T/b.beats"

kill -KILL "$OWN_REDIS_PID"
wait "$OWN_REDIS_PID" 2>/dev/null || true
restart_own_redis # on the dump: the fence of m is there, B's lease is not

# C tries at once and must wait until B's CMD cannot run any more.
"$SIMBA" run --mutex m --ttl 4s -- sh -c 'date +%s%3N >"$0"; echo "$SIMBA_FENCING_TOKEN" >>"$1"' \
  "$T/c.start" "$T/tokens" 2>"$T/c.err" &
c=$!
# status says why nobody holds it, and until when.
"$SIMBA" status --mutex m --json >"$T/status.json"
grep -q '"state":"quarantine"' "$T/status.json" || fail "status after the restart: $(<"$T/status.json")"
"$SIMBA" status --mutex m | grep -E '^m +quarantine +- ' >&2 ||
  fail "status table after the restart: $("$SIMBA" status --mutex m)"
wait_for 20 pid_dead "$b_cmd"
rc=0
wait "$holder" || rc=$?
assert_eq 76 "$rc" "exit status of B, whose lease the restart lost"
wait_for 30 test -s "$T/c.start"
wait "$c" || fail "C failed"
# C's waiting notice names the quarantine (status's state), why and until when.
iso='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'
grep -qE "^simba: waiting for m: in quarantine until about $iso \(in [0-9.]+m?s\): no simba marker of this server run on this database: new, restarted, failed over or flushed, it may have lost a running lease \(a Redis database you know is new: simba doctor --init\)" "$T/c.err" ||
  fail "C's waiting notice: $(cat -- "$T/c.err")"

last_beat=$(tail -n 1 "$T/b.beats")
c_start=$(<"$T/c.start")
echo "B's CMD last ran at $last_beat, C started at $c_start ($((c_start - last_beat)) ms later)" >&2
((c_start > last_beat)) || fail "C started while B's CMD still ran (C at $c_start, B's last beat at $last_beat)"

mapfile -t tokens <"$T/tokens"
assert_eq 3 "${#tokens[@]}" "tokens of A, B and C"
((tokens[0] < tokens[1] && tokens[1] < tokens[2])) || fail "tokens do not increase: ${tokens[*]}"
echo "tokens: ${tokens[*]}" >&2
