#!/usr/bin/env bash
# Redis Sentinel that cannot name a master: sentinels that do not answer, a
# sentinel that does not know the master's name, a Redis that is no
# sentinel, a sentinel that names a replica (ROLE says so), and
# rediss+sentinel:// to a sentinel without TLS each end simba with exit 69 and one line
# saying so; CMD never runs.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/sentinel_common.sh"
needs_backend redis
needs redis-server redis-cli
start_own_redis # a Redis, but no sentinel

# A replica of it, and a sentinel that watches no master but "stale",
# which it believes is at the replica's address.
mkdir -p -- "$T/sentinel"
spawn_redis replica --replicaof 127.0.0.1 "$OWN_REDIS_PORT"
replica=$SPAWNED_PORT
port=$(_free_port)
printf 'port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor stale 127.0.0.1 %s 1\n' \
  "$port" "$T/sentinel" "$replica" >"$T/sentinel/s.conf"
redis-server "$T/sentinel/s.conf" --sentinel </dev/null >/dev/null 2>&1 &
wait_for 10 redis_ping "$port"
closed1=$(_free_port) closed2=$(_free_port)

# expect_69 URI PATTERN: exit 69, one line on stderr matching PATTERN
expect_69() {
  assert_exit 69 timeout -k 2 20 "$SIMBA" run --backend "$1" --mutex m -- touch "$T/ran"
  [[ $(wc -l <"$T/err") == 1 ]] || fail "$1: more than one line: $(cat -- "$T/err")"
  grep -q -- "^simba: error: $2" "$T/err" || fail "$1: unexpected message: $(cat -- "$T/err")"
  [[ ! -e $T/ran ]] || fail "$1: CMD ran"
}

expect_69 "redis+sentinel://127.0.0.1:$closed1,127.0.0.1:$closed2/mymaster?timeout=500ms" \
  "cannot find the Redis master 'mymaster': no sentinel answers (sentinel 127.0.0.1:$closed1: Connection refused)"
expect_69 "redis+sentinel://127.0.0.1:$closed1,127.0.0.1:$port/nosuch?timeout=500ms" \
  "no sentinel knows a master named 'nosuch' (sentinel 127.0.0.1:$closed1: Connection refused)"
expect_69 "redis+sentinel://127.0.0.1:$port/nosuch" "no sentinel knows a master named 'nosuch'\$"
expect_69 "redis+sentinel://127.0.0.1:$OWN_REDIS_PORT/mymaster?timeout=500ms" \
  "cannot find the Redis master 'mymaster': no sentinel answers (sentinel 127.0.0.1:$OWN_REDIS_PORT: ERR unknown command"
expect_69 "redis+sentinel://127.0.0.1:$port/stale" \
  "Redis at 127.0.0.1:$replica is a replica, not the master 'stale'\$"
expect_69 "rediss+sentinel://127.0.0.1:$port/stale?timeout=1s" \
  "cannot find the Redis master 'stale': no sentinel answers (sentinel 127.0.0.1:$port: "
# status and release --force say the same.
assert_exit 69 "$SIMBA" status --backend "redis+sentinel://127.0.0.1:$port/nosuch"
grep -q "no sentinel knows a master named 'nosuch'" "$T/err" || fail "status: $(cat -- "$T/err")"
