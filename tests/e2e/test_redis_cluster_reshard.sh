#!/usr/bin/env bash
# Redis Cluster (docs/backends/redis.md "Redis Cluster"): the mutex's slot moves to another
# master while a lease is held, a waiter is queued and fresh contenders keep
# trying. The slot is migrated by hand, as `redis-cli --cluster reshard`
# does it: SETSLOT IMPORTING / MIGRATING, MIGRATE of its keys, then for
# ~3 s the source answers ASK (the holder's guards go to the target with
# ASKING), then SETSLOT NODE on every master, after which the source
# answers MOVED to every simba whose slot map is older. The holder keeps its
# lease (its keys moved intact) and exits 0, never two CMDs at once, tokens
# keep increasing, and the waiter and the contenders get the mutex after
# it on the new master. The wrong-node replies are proven sent: the source
# counted ASK and MOVED errors, the target ASKING commands.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/cluster_common.sh"
needs redis-server redis-cli

cluster_start "$T/cluster" ||
  fail "could not start a Redis Cluster: $(tail -5 -- "$T/cluster/create.log" 2>/dev/null)"
export SIMBA_BACKEND="$CLUSTER_URI?timeout=500ms"
# A cluster just started: each master marked new, so that the warm-up's
# leases wait no quarantine of a fresh database.
"$SIMBA" doctor --init >/dev/null || fail "doctor --init refused the new cluster"
cluster_warm_up "$SIMBA" "$SIMBA_BACKEND" || fail "cannot warm up the cluster"

A=${CLUSTER_PORTS[0]} B=${CLUSTER_PORTS[1]}
m=$(cluster_name_on "$A" moving) || fail "no mutex name on the first master"
slot=$(ccli "$A" CLUSTER KEYSLOT "{$m}")
id_a=$(ccli "$A" CLUSTER MYID)
id_b=$(ccli "$B" CLUSTER MYID)
lease=(--ttl 1s --transition 2s)
log=$T/log

cat >"$T/cmd.sh" <<'CMD'
log=$1 dir=$2
exec 9>>"$dir/excl"
flock -n 9 || echo "OVERLAP $$ $SIMBA_FENCING_TOKEN" >>"$log"
echo "start $$ $SIMBA_FENCING_TOKEN" >>"$log"
exec sleep "$3"
CMD
starts() {
  local n
  n=$(grep -c '^start ' "$log" 2>/dev/null) || true
  ((${n:-0} >= $1))
}

# Runs and a hand-over on the cluster first.
assert_exit 0 "$SIMBA" run --mutex "$m" "${lease[@]}" -- bash "$T/cmd.sh" "$log" "$T" 0
"$SIMBA" run -v --mutex "$m" "${lease[@]}" -- bash "$T/cmd.sh" "$log" "$T" 8 2>"$T/holder.err" &
holder=$!
wait_for 10 starts 2
"$SIMBA" run -v --mutex "$m" "${lease[@]}" -- bash "$T/cmd.sh" "$log" "$T" 0 2>"$T/waiter.err" &
waiter=$!
sleep 0.5
[[ $(mutex_state "$m") == held ]] || fail "the holder does not hold $m"

# The migration, by hand.
[[ $(ccli "$B" CLUSTER SETSLOT "$slot" IMPORTING "$id_a") == OK ]] || fail "IMPORTING refused"
[[ $(ccli "$A" CLUSTER SETSLOT "$slot" MIGRATING "$id_b") == OK ]] || fail "MIGRATING refused"
mapfile -t keys < <(ccli "$A" CLUSTER GETKEYSINSLOT "$slot" 100)
((${#keys[@]} >= 2)) || fail "the slot has too few keys: ${keys[*]}"
[[ $(ccli "$A" MIGRATE 127.0.0.1 "$B" "" 0 5000 KEYS "${keys[@]}") == OK ]] ||
  fail "MIGRATE failed"
# ASK phase: longer than a lease's ttl, so the holder renews through it.
assert_exit 0 "$SIMBA" status --mutex "$m"
grep -q held "$T/out" || fail "status during the migration: $(cat -- "$T/out")"
sleep 3
# The target first, as redis-cli does (a moment where the source says
# "the target" and the target still says "the source" is possible anyway:
# the client waits it out).
for p in "$B" "$A" "${CLUSTER_PORTS[2]}"; do
  [[ $(ccli "$p" CLUSTER SETSLOT "$slot" NODE "$id_b") == OK ]] || fail "SETSLOT NODE refused on $p"
done
[[ $(cluster_owner "$m") == "$B" ]] || fail "the slot did not move"

(
  end=$(($(now_ms) + 8000))
  while (($(now_ms) < end)); do
    timeout 10 "$SIMBA" run --mutex "$m" --no-wait "${lease[@]}" -- \
      bash "$T/cmd.sh" "$log" "$T" 0 2>>"$T/contenders.err" || true
    sleep 0.2
  done
) &
contenders=$!
holder_rc=0
wait "$holder" || holder_rc=$?
waiter_rc=0
wait "$waiter" || waiter_rc=$?
wait "$contenders" || true

# On a failure: what the holder, the waiter and the contenders said.
show() {
  local f
  for f in holder.err waiter.err contenders.err; do
    printf -- '--- %s\n' "$f"
    tail -n 20 -- "$T/$f" 2>/dev/null
  done
  return 1
} >&2
! grep -q OVERLAP "$log" || fail "two CMDs ran at once: $(cat -- "$log")"
awk '$1 == "start" { if ($3 + 0 <= last + 0) { print "token " $3 " after " last; exit 1 } last = $3 }' \
  "$log" >"$T/verdict" || fail "tokens did not increase: $(cat -- "$T/verdict")"
((holder_rc == 0)) || show || fail "the holder exited $holder_rc: its lease moved with the slot"
((waiter_rc == 0)) || show || fail "the waiter exited $waiter_rc"
starts 4 || show || fail "no CMD ran after the holder's: $(cat -- "$log")"

# The wrong-node paths were taken: ASK and MOVED from the source, ASKING
# on the target.
errorstat() {
  local n
  n=$(ccli "$1" INFO errorstats | tr -d '\r' | sed -n "s/^errorstat_$2:count=//p")
  printf '%s\n' "${n:-0}"
}
(($(errorstat "$A" ASK) > 0)) || fail "the source never answered ASK"
(($(errorstat "$A" MOVED) > 0)) || fail "the source never answered MOVED"
asking=$(ccli "$B" INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_asking:calls=\([0-9]*\).*/\1/p')
((${asking:-0} > 0)) || fail "the target never got ASKING"
echo "holder exit $holder_rc, $(grep -c '^start ' "$log") CMDs, ASKING ${asking}x on the target" >&2
