#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# An ACL user that may not run a command one of simba's scripts calls: the
# check at start cannot see it, the server refuses every script. simba ends
# with 69 and one line at once instead of waiting forever (a waiter), and an
# owner whose renewal is refused (the ACL changed while CMD runs) stops CMD
# at once and exits 69 (README and docs/backends/redis.md "ACL users").
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
needs redis-cli
start_own_redis
port=$OWN_REDIS_PORT
cli() { redis-cli -p "$port" "$@"; }

readme=$(dirname -- "${BASH_SOURCE[0]}")/../../docs/backends/redis.md
line=$(grep -m1 '^ACL SETUSER simba on >PASSWORD ' "$readme") || fail "docs/backends/redis.md has no ACL line"
read -ra acl <<<"${line#ACL SETUSER simba }"
acl=("${acl[@]/#>PASSWORD/>s3cr3t-pw-42}")
make_user() { # NAME [ACL-WORD-TO-DROP]
  local name=$1 drop=${2:-} w words=()
  for w in "${acl[@]}"; do [[ $w == "$drop" ]] || words+=("$w"); done
  assert_eq OK "$(cli ACL SETUSER "$name" "${words[@]}")" "ACL SETUSER $name"
}
make_user simba
make_user no-lpush +lpush # every acquire's script pushes to the history
export SIMBA_REDIS_PASSWORD=s3cr3t-pw-42
as() { echo "redis://$1@127.0.0.1:$port/0?quarantine=off"; }
export SIMBA_BACKEND
SIMBA_BACKEND=$(as simba)

# 1. A waiter refused inside the script: 69 within seconds, one line, CMD
# never run, nothing held.
start=$(now_ms)
assert_exit 69 timeout -k 2 20 "$SIMBA" run --backend "$(as no-lpush)" --mutex m -- touch "$T/ran"
took=$(($(now_ms) - start))
((took < 3000)) || fail "a refused acquire took ${took}ms (a wait with retries?)"
[[ ! -e $T/ran ]] || fail "CMD ran without a lease"
assert_eq 1 "$(wc -l <"$T/err")" "lines on stderr ($(cat -- "$T/err"))"
want="^simba: error: redis://no-lpush@127.0.0.1:$port/0.* refused acquire for m: ERR .*user executing the script can't run this command.* \(README \"ACL users\"\)$"
grep -Eq "$want" "$T/err" || fail "unexpected line: $(cat -- "$T/err")"
! grep -q 's3cr3t' "$T/err" || fail "the password was shown"
assert_eq free "$(mutex_state m)" "m after the refusal"
# --no-wait says the same
assert_exit 69 timeout -k 2 20 "$SIMBA" run --no-wait --backend "$(as no-lpush)" --mutex m -- true
grep -Eq "$want" "$T/err" || fail "--no-wait: unexpected line: $(cat -- "$T/err")"

# 2. An owner whose renewal is refused: CMD stopped at once (long before the
# lease ends), exit 69, the release refused too (a warning: the lease
# expires by itself).
"$SIMBA" run --mutex g --ttl 3s --transition 1s -- sh -c 'echo $$ >"$0"; exec sleep 60' \
  "$T/cmd.pid" 2>"$T/owner.err" &
owner=$!
wait_for 10 test -s "$T/cmd.pid"
assert_eq OK "$(cli ACL SETUSER simba -evalsha -eval)" "taking EVALSHA away"
start=$(now_ms)
rc=0
wait "$owner" || rc=$?
took=$(($(now_ms) - start))
assert_eq 69 "$rc" "the owner's exit status ($(cat -- "$T/owner.err"))"
((took < 4000)) || fail "the owner took ${took}ms to stop"
pid_dead "$(<"$T/cmd.pid")" || fail "CMD still runs"
grep -Eq "^simba: error: redis://simba@127.0.0.1:$port/0.* refused renew for g: NOPERM .*evalsha.* \(README \"ACL users\"\); stopping the command$" \
  "$T/owner.err" || fail "unexpected owner log: $(cat -- "$T/owner.err")"
grep -q "refused release for g" "$T/owner.err" || fail "no word on the refused release: $(cat -- "$T/owner.err")"
