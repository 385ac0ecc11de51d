#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd mysql
# CMD gets the lease in its environment (DESIGN §6): SIMBA_MUTEX,
# SIMBA_CONTENDER_ID (the label), SIMBA_OWNER_ID (label#instance, what
# status shows), SIMBA_FENCING_TOKEN, SIMBA_ACQUIRED_AT, SIMBA_TTL_MS,
# SIMBA_TRANSITION_MS; stale values inherited from simba's own environment are
# replaced; the fencing token strictly increases from one run to the next.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

# dump FILE: the CMD that writes its SIMBA_* variables (and simba's pid: the
# parent of CMD's parent, simba's watchdog) to FILE, one NAME=VALUE per line.
dump() {
  printf '%s\n' sh -c 'env | grep "^SIMBA_" >"$0"; read -r _ _ _ s _ </proc/$PPID/stat; echo "PARENT_PID=$s" >>"$0"' "$1"
}

# var FILE NAME: the value of NAME in FILE ("" when missing).
var() { sed -n "s/^$2=//p" "$1"; }

is_posint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

# Explicit options; stale lease variables in simba's own environment.
mapfile -t cmd < <(dump "$T/env1")
t0=$(now_ms)
SIMBA_FENCING_TOKEN=999 SIMBA_ACQUIRED_AT=1 SIMBA_TTL_MS=5 SIMBA_TRANSITION_MS=5 \
  SIMBA_CONTENDER_ID=stale \
  assert_exit 0 simba_bounded run --mutex ci/env-test --contender-id tester@e2e \
  --ttl 1s --transition 500ms -- "${cmd[@]}"
t1=$(now_ms)

assert_eq ci/env-test "$(var "$T/env1" SIMBA_MUTEX)" SIMBA_MUTEX
assert_eq tester@e2e "$(var "$T/env1" SIMBA_CONTENDER_ID)" SIMBA_CONTENDER_ID
owner1=$(var "$T/env1" SIMBA_OWNER_ID)
[[ $owner1 =~ ^tester@e2e#[0-9a-f]{16}$ ]] || fail "SIMBA_OWNER_ID is not the label plus an instance id: [$owner1]"
assert_eq 1000 "$(var "$T/env1" SIMBA_TTL_MS)" "SIMBA_TTL_MS for --ttl 1s"
assert_eq 500 "$(var "$T/env1" SIMBA_TRANSITION_MS)" "SIMBA_TRANSITION_MS for --transition 500ms"
token1=$(var "$T/env1" SIMBA_FENCING_TOKEN)
is_posint "$token1" || fail "SIMBA_FENCING_TOKEN is not a positive integer: [$token1]"
((token1 != 999)) || fail "SIMBA_FENCING_TOKEN is the stale value from simba's environment"
acquired=$(var "$T/env1" SIMBA_ACQUIRED_AT)
is_posint "$acquired" || fail "SIMBA_ACQUIRED_AT is not a positive integer: [$acquired]"
# Epoch milliseconds of the backend's clock: on this host, between the start
# and the end of the run (with a generous margin for clock granularity).
((acquired >= t0 - 2000 && acquired <= t1 + 2000)) ||
  fail "SIMBA_ACQUIRED_AT=$acquired is not epoch ms within the run [$t0, $t1]"

# Defaults: ttl 10s, transition 2s; the default contender id names simba's pid.
mapfile -t cmd < <(dump "$T/env2")
assert_exit 0 simba_bounded run --mutex ci/env-test -- "${cmd[@]}"
assert_eq 10000 "$(var "$T/env2" SIMBA_TTL_MS)" "default SIMBA_TTL_MS"
assert_eq 2000 "$(var "$T/env2" SIMBA_TRANSITION_MS)" "default SIMBA_TRANSITION_MS"
id=$(var "$T/env2" SIMBA_CONTENDER_ID)
simba_pid=$(var "$T/env2" PARENT_PID)
[[ -n $id && ${#id} -le 128 ]] || fail "default SIMBA_CONTENDER_ID is empty or too long: [$id]"
[[ $id =~ (^|[^0-9])$simba_pid([^0-9]|$) ]] ||
  fail "default SIMBA_CONTENDER_ID [$id] does not name simba's pid $simba_pid"
owner2=$(var "$T/env2" SIMBA_OWNER_ID)
[[ $owner2 == "$id#"* && ${#owner2} -le 128 ]] || fail "default SIMBA_OWNER_ID [$owner2] is not [$id#...]"
token2=$(var "$T/env2" SIMBA_FENCING_TOKEN)
is_posint "$token2" || fail "SIMBA_FENCING_TOKEN is not a positive integer: [$token2]"
((token2 > token1)) || fail "fencing token did not increase: $token1 then $token2"

# Consecutive runs: strictly increasing tokens, also with another mutex
# being used in between.
prev=$token2
for i in 3 4 5; do
  mapfile -t cmd < <(dump "$T/env$i")
  assert_exit 0 simba_bounded run --mutex ci/env-test --ttl 1s --transition 500ms -- "${cmd[@]}"
  assert_exit 0 simba_bounded run --mutex other -- true
  tok=$(var "$T/env$i" SIMBA_FENCING_TOKEN)
  is_posint "$tok" || fail "run $i: SIMBA_FENCING_TOKEN is not a positive integer: [$tok]"
  ((tok > prev)) || fail "run $i: fencing token did not increase: $prev then $tok"
  prev=$tok
done
