#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# ACL users: redis://user@host with the password from SIMBA_REDIS_PASSWORD.
# A user with exactly the ACL of docs/backends/redis.md "ACL users" runs, hands over, lists
# and force-releases; one without EVALSHA, without the channel pattern or
# without the keys ends simba at once with 69 and one line (not a wait
# without end), CMD not run, the password never shown. Through a sentinel
# (redis+sentinel://) the same ACL runs, and one without ROLE is refused.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
needs redis-cli
start_own_redis
port=$OWN_REDIS_PORT
cli() { redis-cli -p "$port" "$@"; }

# The ACL as docs/backends/redis.md documents it (one line), with our password.
readme=$(dirname -- "${BASH_SOURCE[0]}")/../../docs/backends/redis.md
line=$(grep -m1 '^ACL SETUSER simba on >PASSWORD ' "$readme") || fail "docs/backends/redis.md has no ACL line"
read -ra acl <<<"${line#ACL SETUSER simba }"
acl=("${acl[@]/#>PASSWORD/>s3cr3t-pw-42}")
# Every command the scripts call is in it (else a NOPERM inside a script,
# which the check at start cannot see, makes every call fail).
# The publishing command is a variable (lua/common.lua: PUBLISH, SPUBLISH in
# a Redis Cluster, whose line there adds what a cluster needs).
cluster_line=$(grep -m1 '^ACL SETUSER simba +cluster|slots ' "$readme") ||
  fail "docs/backends/redis.md has no ACL line for a Redis Cluster"
lua=$(dirname -- "${BASH_SOURCE[0]}")/../../src/backend/redis/lua
for c in $({
  grep -ohE "redis\.p?call\('[A-Za-z]+'" "$lua"/*.lua | cut -d"'" -f2
  grep -ohE "PUBLISH = '[A-Z]+'" "$lua"/*.lua | cut -d"'" -f2
} | tr A-Z a-z | sort -u); do
  [[ " ${acl[*]} $cluster_line " == *" +$c "* ]] ||
    fail "the documented ACL lacks +$c, which the scripts call"
done
# user ACL-WORD-TO-DROP: the documented ACL without one of its words
make_user() {
  local name=$1 drop=${2:-} w words=()
  for w in "${acl[@]}"; do [[ $w == "$drop" ]] || words+=("$w"); done
  assert_eq OK "$(cli ACL SETUSER "$name" "${words[@]}")" "ACL SETUSER $name"
}
make_user simba
make_user no-evalsha +evalsha
make_user no-channels '&simba:*'
make_user no-keys '~simba:*'
make_user no-role +role
make_user no-subscribe +subscribe
export SIMBA_REDIS_PASSWORD=s3cr3t-pw-42
as() { echo "redis://$1@127.0.0.1:$port/0?quarantine=off"; }

# 1. The documented ACL: a run, a hand-over, status, release --force.
export SIMBA_BACKEND
SIMBA_BACKEND=$(as simba)
assert_exit 0 "$SIMBA" run --mutex m -- true
"$SIMBA" run --mutex m -- sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0"; i=0
  while [ ! -e "$1" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done' "$T/holder.token" "$T/go" &
holder=$!
wait_for 10 test -s "$T/holder.token"
SIMBA_CALL_COUNT_FILE="$T/calls" "$SIMBA" run --mutex m -- sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0"' \
  "$T/waiter.token" &
waiter=$!
queued() { test "$(cli ZCARD 'simba:{m}:waiters')" = 1; }
wait_for 15 queued
touch "$T/go"
rc=0
wait "$waiter" || rc=$?
assert_eq 0 "$rc" "the waiter's exit status"
wait "$holder"
(($(<"$T/waiter.token") > $(<"$T/holder.token"))) || fail "tokens do not increase"
read -r _ calls <"$T/calls"
assert_eq 2 "$calls" "the waiter's backend calls (a hand-over; an acquire of its own makes 3)"
assert_exit 0 "$SIMBA" status --json --all
grep -q '"mutex":"m"' "$T/out" || fail "status does not list m: $(cat -- "$T/out")"
"$SIMBA" run --mutex held -- sleep 30 &
owner=$!
held_now() { test "$(mutex_state held)" = held; } # asked again at each try
wait_for 10 held_now
assert_exit 0 "$SIMBA" release --mutex held --force
wait_for 10 pid_dead "$owner" # its CMD stopped: the release reached it

# 2. One word less: 69 at once, one line naming what is missing.
refused() { # USER PATTERN
  rm -f -- "$T/ran"
  assert_exit 69 timeout -k 2 10 "$SIMBA" run --backend "$(as "$1")" --mutex m -- touch "$T/ran"
  [[ ! -e $T/ran ]] || fail "CMD ran as $1"
  assert_eq 1 "$(wc -l <"$T/err")" "lines on stderr ($(cat -- "$T/err"))"
  grep -Eq "^simba: error: Redis at 127.0.0.1:$port: user $1 lacks what simba needs \(README \"ACL users\"\): NOPERM .*$2" "$T/err" ||
    fail "expected $2, got: $(cat -- "$T/err")"
}
refused no-evalsha "'evalsha' command"
refused no-channels "channels"
refused no-keys "keys"

# 2b. Without +subscribe a waiter cannot hear releases: it waits on its timer,
# and says so once (not a silent slow hand-over).
"$SIMBA" run --mutex sub --ttl 1s --transition 500ms -- sh -c 'touch "$0"; sleep 1' "$T/sub.held" &
holder=$!
wait_for 10 test -e "$T/sub.held"
assert_exit 0 timeout -k 2 20 "$SIMBA" run --backend "$(as no-subscribe)" --mutex sub -- true
wait "$holder"
assert_eq 1 "$(grep -c 'cannot use the release notification' "$T/err")" \
  "warnings about the notification ($(cat -- "$T/err"))"
grep -q "NOPERM.*the ACL needs +subscribe.*hand-overs will be slow" "$T/err" ||
  fail "the warning does not say why: $(cat -- "$T/err")"

# 3. A password in the URI is never shown, even when refused.
unset SIMBA_REDIS_PASSWORD
assert_exit 69 "$SIMBA" run --backend "redis://no-evalsha:s3cr3t-pw-42@127.0.0.1:$port/0" --mutex m -- true
! grep -q 's3cr3t' "$T/err" || fail "the password was shown: $(cat -- "$T/err")"
assert_exit 69 "$SIMBA" run --backend "redis://simba:wrong-pw-77@127.0.0.1:$port/0" --mutex m -- true
! grep -q 'wrong-pw-77' "$T/err" || fail "the password was shown: $(cat -- "$T/err")"
grep -q 'refused the password' "$T/err" || fail "no word about the password: $(cat -- "$T/err")"

# 4. Sentinel: simba also sends ROLE and INFO replication to the master.
source "$(dirname -- "${BASH_SOURCE[0]}")/sentinel_common.sh"
mkdir -p -- "$T/sentinel"
spawn_sentinel "sentinel monitor mymaster 127.0.0.1 $port 1"
sport=$SPAWNED_PORT
export SIMBA_REDIS_PASSWORD=s3cr3t-pw-42
via() { echo "redis+sentinel://$1@127.0.0.1:$sport/mymaster?quarantine=off"; }
assert_exit 0 "$SIMBA" run --backend "$(via simba)" --mutex m -- true
rm -f -- "$T/ran"
assert_exit 69 timeout -k 2 10 "$SIMBA" run --backend "$(via no-role)" --mutex m -- touch "$T/ran"
[[ ! -e $T/ran ]] || fail "CMD ran as no-role"
assert_eq 1 "$(wc -l <"$T/err")" "lines on stderr ($(cat -- "$T/err"))"
grep -Eq "^simba: error: Redis at 127.0.0.1:$port: user no-role lacks what simba needs \(README \"ACL users\"\): NOPERM .*'role' command" "$T/err" ||
  fail "expected ROLE's NOPERM, got: $(cat -- "$T/err")"
