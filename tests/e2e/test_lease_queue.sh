#!/usr/bin/env bash
# backends: sqlite redis postgres redis-cluster etcd mysql
# Three jobs queue on simba acquire while a fourth holds the mutex: they get
# it in their arrival order, each one as the previous job releases.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

"$SIMBA" acquire --mutex q --ttl 30s --env-file "$T/holder.env" || fail "acquire of the holder"
# job N: acquire, note the order, hold briefly, release
job() {
  "$SIMBA" acquire --mutex q --ttl 30s --contender-id "job$1" --env-file "$T/job$1.env" ||
    fail "acquire of job $1"
  echo "$1" >>"$T/order"
  sleep 0.2
  (set -a && . "$T/job$1.env" && "$SIMBA" release --lease "$SIMBA_LEASE") || fail "release of job $1"
}
# status lists job N in the queue before job N+1 arrives.
queued() { (($("$SIMBA" status --mutex q --format json | grep -o '"position"' | wc -l) == $1)); }
for n in 1 2 3; do
  job "$n" 2>/dev/null &
  wait_for 10 queued "$n"
done
[[ -e $T/order ]] && fail "a job acquired while the holder held: $(<"$T/order")"
(set -a && . "$T/holder.env" && "$SIMBA" release --lease "$SIMBA_LEASE") || fail "release of the holder"
done3() { [[ $(wc -l <"$T/order" 2>/dev/null) == 3 ]]; }
wait_for 15 done3
assert_eq "1 2 3" "$(tr '\n' ' ' <"$T/order" | sed 's/ $//')" "order in which the jobs acquired"
wait
assert_eq free "$(mutex_state q)" "after the three jobs"
