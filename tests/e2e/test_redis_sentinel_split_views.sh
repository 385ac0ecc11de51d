#!/usr/bin/env bash
# Sentinels that disagree (sentinel.hpp, docs/backends/redis.md "Redis Sentinel"): after a
# failover the sentinels switch to the new master one by one, and a host
# whose first sentinel is cut off or slow asks the next. simba takes a
# master only when a majority of the URI's sentinels name it.
#
# Two masters A and B (no replicas: a split brain as Sentinel leaves one)
# and three sentinels; sentinel 1 names A, the others are switched from A
# to B while a holder runs on A:
#  1. the holder (sentinels listed 1,2,3) is stopped at its lease's end
#     (exit 76): its next renewal goes where the majority says, B;
#  2. a waiter that lists sentinel 2 first takes the mutex on B after B's
#     quarantine, and never while the holder's CMD may run;
#  3. with only one sentinel of three answering, nothing is granted: one
#     line, exit 69.
# With the first answer taken (the rule before), the holder renewed on A
# for its whole CMD while the waiter ran on B: OVERLAP.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/sentinel_common.sh"
needs_backend redis
needs redis-server redis-cli

mkdir -p -- "$T/sentinel"
spawn_redis a
A=$SPAWNED_PORT
spawn_redis b
B=$SPAWNED_PORT
S=() SP=()
for _ in 1 2 3; do
  spawn_sentinel "sentinel monitor mymaster 127.0.0.1 $A 1
sentinel down-after-milliseconds mymaster 60000"
  S+=("$SPAWNED_PORT") SP+=("$SPAWNED_PID")
done
names() { rcli "$1" SENTINEL get-master-addr-by-name mymaster | sed -n 2p; }
uri() { # sentinels in the order given
  local u="redis+sentinel://" p
  for p in "$@"; do u+="127.0.0.1:$p,"; done
  printf '%s/mymaster?timeout=500ms' "${u%,}"
}
for p in "${S[@]}"; do [[ $(names "$p") == "$A" ]] || fail "sentinel $p does not name A"; done

cat >"$T/cmd.sh" <<'CMD'
exec 9>>"$2/excl"
flock -n 9 || echo "OVERLAP $$" >>"$1"
echo "start $$ ${EPOCHREALTIME/./} $3" >>"$1"
sleep "$3"
echo "end $$ ${EPOCHREALTIME/./}" >>"$1"
CMD
log=$T/log
lease=(--ttl 2s --transition 2s)

# A's first lease would wait for its quarantine (a fresh database): A, just
# started, is marked new (B is not: the waiter on B waits B's).
"$SIMBA" doctor --init --backend "$(uri "${S[@]}")" >/dev/null || fail "doctor --init refused A"
"$SIMBA" run --backend "$(uri "${S[@]}")" --mutex warm-up "${lease[@]}" -- true
"$SIMBA" run --backend "$(uri "${S[@]}")" --mutex splitmx "${lease[@]}" -- \
  bash "$T/cmd.sh" "$log" "$T" 9 2>"$T/holder.err" &
holder=$!
wait_for 10 grep -q '^start' "$log"
[[ -n $(rcli "$A" --scan --pattern '*splitmx*') ]] ||
  fail "the holder's lease is not on A"

# Sentinels 2 and 3 now name B; sentinel 1 still names A.
for p in "${S[1]}" "${S[2]}"; do
  rcli "$p" SENTINEL REMOVE mymaster >/dev/null
  [[ $(rcli "$p" SENTINEL MONITOR mymaster 127.0.0.1 "$B" 1) == OK ]] || fail "MONITOR B on $p"
done
[[ $(names "${S[0]}") == "$A" && $(names "${S[1]}") == "$B" ]] || fail "the sentinels did not switch"
t0=$(now_ms)
"$SIMBA" run --backend "$(uri "${S[1]}" "${S[2]}" "${S[0]}")" --mutex splitmx "${lease[@]}" -- \
  bash "$T/cmd.sh" "$log" "$T" 0 2>"$T/waiter.err" &
waiter=$!

holder_rc=0
wait "$holder" || holder_rc=$?
holder_ms=$(($(now_ms) - t0))
waiter_rc=0
wait "$waiter" || waiter_rc=$?
cat -- "$log" >&2
! grep -q OVERLAP "$log" || fail "two CMDs ran at once: $(cat -- "$log")"
((holder_rc == 76)) || fail "holder: exit $holder_rc, not 76 ($(cat -- "$T/holder.err"))"
((holder_ms < 5000)) || fail "the holder ran on A ${holder_ms} ms after the switch"
((waiter_rc == 0)) || fail "waiter: exit $waiter_rc ($(cat -- "$T/waiter.err"))"
(($(grep -c '^start' "$log") == 2)) || fail "the waiter's CMD did not run"
[[ -n $(rcli "$B" --scan --pattern '*splitmx*') ]] || fail "the waiter's lease is not on B"
echo "holder stopped ${holder_ms} ms after the switch" >&2

# 3. One sentinel of three: no majority, exit 69 with one line.
kill -STOP "${SP[2]}"
rcli "${S[1]}" SENTINEL REMOVE mymaster >/dev/null
assert_exit 69 "$SIMBA" run --backend "$(uri "${S[@]}")" --mutex n --no-wait -- true
grep -q "^simba: error: cannot find the Redis master 'mymaster': no majority of its 3 sentinels names one (127.0.0.1:$A by 1" "$T/err" ||
  fail "no-majority message: $(cat -- "$T/err")"
(($(wc -l <"$T/err") == 1)) || fail "more than one line: $(cat -- "$T/err")"
kill -CONT "${SP[2]}"
