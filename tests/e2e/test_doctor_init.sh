#!/usr/bin/env bash
# simba doctor --init (issue 31 §2, issue 32 §2): an admin who knows a Redis
# database is new marks it so, and the first lease there waits no
# quarantine: the first `run --no-wait` on a fresh server runs at once
# (without the mark it exits 69 in quarantine). Refused (exit 1, one line
# that says why) once simba has used the database, and on a server
# restarted with simba's keys; 64 for a backend that is not Redis.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
start_own_redis
export SIMBA_BACKEND=$OWN_REDIS_URI
bounded() { timeout -k 5 30 "$@"; }

# Not marked: the first lease waits a quarantine (--no-wait: 69).
assert_exit 69 bounded "$SIMBA" run --mutex before --no-wait -- true
grep -q "simba doctor --init" "$T/err" || fail "the quarantine notice names no remedy: $(cat "$T/err")"

# A fresh server, marked: the first lease at once.
restart_own_redis
assert_exit 0 bounded "$SIMBA" doctor --init
grep -q "^simba: marked database 0 at 127.0.0.1:$OWN_REDIS_PORT .* as new" "$T/out" ||
  fail "--init said: $(cat "$T/out" "$T/err")"
assert_exit 0 bounded "$SIMBA" run --mutex first --no-wait -- echo ran
grep -qx ran "$T/out" || fail "the first run after --init: $(cat "$T/out" "$T/err")"

# Marked already, simba's keys there: refused, nothing changed.
assert_exit 1 bounded "$SIMBA" doctor --init
assert_eq 1 "$(wc -l <"$T/err")" "lines of the refusal ($(cat "$T/err"))"
grep -q "^simba: error: " "$T/err" || fail "refusal: $(cat "$T/err")"

# A fresh server with any key under simba's prefix (here one left by hand)
# is no new database: refused.
restart_own_redis
redis_cmd SET "simba:{left-over}" x >/dev/null
assert_exit 1 bounded "$SIMBA" doctor --init
grep -q "^simba: error: " "$T/err" || fail "refusal with simba's keys: $(cat "$T/err")"

assert_exit 64 bounded "$SIMBA" doctor --init --backend "sqlite:$T/x.db"
grep -q "^simba: error: --init marks a new Redis database" "$T/err" || fail "SQLite: $(cat "$T/err")"
