#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# First contact with a Redis database (issue 31 §2). A server that has been
# up longer than the lease asked for (+ 1 s) and whose INFO shows nothing
# that may have erased keys grants the first lease at once, where it used
# to wait a quarantine (ttl + transition + 1 s). So does a server started a
# moment ago once its marker is written by hand (README "Redis": the admin
# step). Every other server without a marker still waits, and says why: one
# just started (a restart without persistence looks the same), and one
# server per kind of evidence the rule reads (FLUSHALL, FLUSHDB, SWAPDB,
# CONFIG RESETSTAT after a FLUSHALL, DEBUG RELOAD, a promoted replica, an
# eviction, a marker deleted while the mutex's keys stay).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis # skips like the others when Redis tests are off
needs redis-cli
redis_bin=$(command -v redis-server)
terms=(--ttl 1s --transition 1s) # a quarantine of 3 s: the uptime needed

# spawn NAME [ARG...]: a redis-server of the test's own on a free port,
# without persistence; sets PORT[NAME].
declare -A PORT
spawn() {
  local name=$1 port attempt i
  shift
  mkdir -p -- "$T/$name"
  for ((attempt = 0; attempt < 20; attempt++)); do
    port=$((20000 + RANDOM % 40000))
    redis_ping "$port" && continue
    "$redis_bin" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
      --dir "$T/$name" --logfile "$T/$name/redis.log" "$@" </dev/null >/dev/null 2>&1 &
    for ((i = 0; i < 100; i++)); do
      if redis_ping "$port"; then
        PORT[$name]=$port
        return 0
      fi
      sleep 0.05
    done
  done
  fail "could not start redis-server $name"
}
cli() { local name=$1; shift; redis-cli -p "${PORT[$name]}" "$@"; }
uri() { echo "redis://127.0.0.1:${PORT[$1]}/0?timeout=2s"; }

# try NAME MUTEX: one --no-wait run on NAME; its exit code, its time in ms
# in $T/NAME.ms and its stderr in $T/NAME.err.
try() {
  local rc=0 t0
  t0=$(now_ms)
  "$SIMBA" run --backend "$(uri "$1")" --mutex "$2" "${terms[@]}" --no-wait -- true \
    2>"$T/$1.err" || rc=$?
  echo $(($(now_ms) - t0)) >"$T/$1.ms"
  echo "$rc"
}

# quarantined NAME [MUTEX]: the first contact must wait, and say why.
quarantined() {
  local rc
  rc=$(try "$1" "${2:-m}")
  assert_eq 69 "$rc" "first contact on '$1' ($(<"$T/$1.err"))"
  grep -q 'in quarantine until about .*: no simba marker on this database: new, restarted or flushed' \
    "$T/$1.err" || fail "the notice on '$1' does not say why: $(<"$T/$1.err")"
}

# The servers, all at once (each waits out the same uptime).
for s in aged flushall flushdb swapdb resetstat evicted deleted; do spawn "$s"; done
spawn debug --enable-debug-command yes
spawn promoted --replicaof 127.0.0.1 "${PORT[aged]}" --dbfilename promoted.rdb
cli flushall FLUSHALL >/dev/null
cli flushdb FLUSHDB >/dev/null
cli swapdb SWAPDB 0 1 >/dev/null
cli resetstat FLUSHALL >/dev/null
cli resetstat CONFIG RESETSTAT >/dev/null
cli debug DEBUG RELOAD >/dev/null
cli evicted CONFIG SET maxmemory-policy volatile-lru >/dev/null
cli evicted CONFIG SET maxmemory 2mb >/dev/null
for ((i = 0; i < 200; i++)); do
  cli evicted INFO stats | grep -q '^evicted_keys:0' || break
  cli evicted EVAL "for i = 1, 500 do redis.call('SET', ARGV[1] .. i, string.rep('x', 200), 'EX', 3600) end" \
    0 "k$i:" >/dev/null 2>&1 || true
done
cli evicted INFO stats | grep -q '^evicted_keys:0' && fail "no eviction on 'evicted'"
cli evicted CONFIG SET maxmemory 0 >/dev/null
wait_for 10 sh -c "redis-cli -p ${PORT[promoted]} INFO replication | grep -q master_link_status:up"
cli promoted REPLICAOF NO ONE >/dev/null

# Just started, no marker: a restart without persistence looks the same.
spawn fresh
quarantined fresh
# Another mutex in that quarantine: the marker keeps the reason (JSON too).
rc=0
"$SIMBA" run --backend "$(uri fresh)" --mutex m2 "${terms[@]}" --no-wait --log-format json \
  -- true 2>"$T/fresh.json" || rc=$?
assert_eq 69 "$rc" "a second mutex on 'fresh' ($(<"$T/fresh.json"))"
grep -q '"quarantine":true.*"no_marker":true' "$T/fresh.json" ||
  fail "no no_marker in the JSON notice: $(<"$T/fresh.json")"
# The admin step (README "Redis"): this database is new.
spawn init
run_id=$(cli init INFO server | sed -n 's/^run_id:\([0-9a-f]*\).*/\1/p')
cli init HSET simba:server run "$run_id" >/dev/null
# The admin step: at once.
rc=$(try init m)
assert_eq 0 "$rc" "first contact after the admin step ($(<"$T/init.err"))"
echo "first contact after the admin step: $(<"$T/init.ms") ms" >&2
(($(<"$T/init.ms") < 1000)) || fail "first contact after the admin step took $(<"$T/init.ms") ms"

# Every other server (promoted: the last started) is now up longer than
# the lease asked for + 1 s: the uptime alone would not quarantine them.
wait_for 10 sh -c "redis-cli -p ${PORT[promoted]} INFO server | grep -qE '^uptime_in_seconds:([4-9]|[1-9][0-9])'"

# Up long enough, nothing erased: at once (it used to wait 3 s).
rc=$(try aged m)
assert_eq 0 "$rc" "first contact on a server up long enough ($(<"$T/aged.err"))"
echo "first contact on a server up long enough: $(<"$T/aged.ms") ms" >&2
(($(<"$T/aged.ms") < 1000)) || fail "first contact took $(<"$T/aged.ms") ms"
# ... and its database is marked now: a later first use of a mutex too.
assert_eq 0 "$(try aged other)" "a second mutex ($(<"$T/aged.err"))"

for s in flushall flushdb swapdb resetstat debug evicted promoted; do quarantined "$s"; done

# A marker deleted by hand while the mutex's keys stay: that mutex waits; a
# mutex with no key at all does not (nothing shows a lease was lost).
assert_eq 0 "$(try deleted m)" "first contact on 'deleted' ($(<"$T/deleted.err"))"
cli deleted DEL simba:server >/dev/null
quarantined deleted m
cli deleted DEL simba:server >/dev/null
assert_eq 0 "$(try deleted never-used)" "a mutex without keys on 'deleted' ($(<"$T/deleted.err"))"
