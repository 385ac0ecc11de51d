#!/usr/bin/env bash
# Redis Cluster with an ACL user (docs/backends/redis.md "ACL users", "Redis Cluster"): a
# user with the documented ACL plus its line for a cluster, set on every node,
# runs, hands over, and lists the mutexes of every master; one without
# +spublish ends simba at once with 69 and one line (the probe at start),
# CMD not run.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/cluster_common.sh"
needs redis-server redis-cli

readme=$(dirname -- "${BASH_SOURCE[0]}")/../../docs/backends/redis.md
line=$(grep -m1 '^ACL SETUSER simba on >PASSWORD ' "$readme") || fail "docs/backends/redis.md has no ACL line"
cluster_line=$(grep -m1 '^ACL SETUSER simba +cluster|slots ' "$readme") ||
  fail "docs/backends/redis.md has no ACL line for a Redis Cluster"
read -ra acl <<<"${line#ACL SETUSER simba }"
acl=("${acl[@]/#>PASSWORD/>s3cr3t-pw-42}")
read -ra more <<<"${cluster_line#ACL SETUSER simba }"

cluster_start "$T/cluster" ||
  fail "could not start a Redis Cluster: $(tail -5 -- "$T/cluster/create.log" 2>/dev/null)"
# user NAME ACL-WORD-TO-DROP: the documented ACL and its cluster line,
# without one word, on every node
make_user() {
  local name=$1 drop=${2:-} w words=() p
  for w in "${acl[@]}" "${more[@]}"; do [[ $w == "$drop" ]] || words+=("$w"); done
  for p in "${CLUSTER_PORTS[@]}"; do
    assert_eq OK "$(ccli "$p" ACL SETUSER "$name" "${words[@]}")" "ACL SETUSER $name on $p"
  done
}
make_user simba
make_user no-spublish +spublish
export SIMBA_REDIS_PASSWORD=s3cr3t-pw-42
as() { echo "redis+cluster://$1@127.0.0.1:${CLUSTER_PORTS[0]},127.0.0.1:${CLUSTER_PORTS[1]}?quarantine=off"; }

# Mutexes on two masters, a hand-over on one of them.
m1=$(cluster_name_on "${CLUSTER_PORTS[0]}" acl) || fail "no name on the first master"
m2=$(cluster_name_on "${CLUSTER_PORTS[2]}" acl) || fail "no name on the third master"
assert_exit 0 "$SIMBA" run --backend "$(as simba)" --mutex "$m2" -- true
"$SIMBA" run --backend "$(as simba)" --mutex "$m1" -- sh -c 'echo first >>"$0"; sleep 1' "$T/runs" &
first=$!
wait_for 10 test -s "$T/runs"
assert_exit 0 "$SIMBA" run --backend "$(as simba)" --mutex "$m1" -- sh -c 'echo second >>"$0"' "$T/runs"
wait "$first" || fail "the first holder failed"
assert_eq "first second" "$(tr '\n' ' ' <"$T/runs" | sed 's/ $//')" "both ran, in order"
assert_exit 0 "$SIMBA" status --all --backend "$(as simba)"
grep -q "^$m1 " "$T/out" && grep -q "^$m2 " "$T/out" ||
  fail "status did not list both masters' mutexes: $(cat -- "$T/out")"

assert_exit 69 "$SIMBA" run --backend "$(as no-spublish)" --mutex "$m1" -- touch "$T/ran"
[[ ! -e $T/ran ]] || fail "CMD ran for a user that may not publish"
grep -q 'lacks what simba needs' "$T/err" || fail "unclear refusal: $(cat -- "$T/err")"
[[ $(wc -l <"$T/err") == 1 ]] || fail "more than one line: $(cat -- "$T/err")"
! grep -q s3cr3t "$T/err" || fail "the password was shown"
