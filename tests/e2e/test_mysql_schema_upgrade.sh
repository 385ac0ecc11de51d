#!/usr/bin/env bash
# Tables made by an older simba (before 2026-12-06's waiters' columns
# woken_at and gives_up_at and the index on conn_id): the first call that
# needs them adds them (ALTER TABLE ... IF NOT EXISTS) and goes on; a
# waiter queues and status lists it, with its give-up time.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/mysql_common.sh"
use_test_mysql
needs mariadb jq
[[ $SIMBA_BACKEND =~ ^mysql://([^:@]+):([^@]+)@([^:/]+):([0-9]+)/([^?]+)\?prefix=([a-z0-9_]+)$ ]] ||
  fail "unexpected test URI: $SIMBA_BACKEND"
user=${BASH_REMATCH[1]} host=${BASH_REMATCH[3]} port=${BASH_REMATCH[4]} db=${BASH_REMATCH[5]}
prefix=${BASH_REMATCH[6]} pw=${BASH_REMATCH[2]}
my() { MYSQL_PWD=$pw mariadb --no-defaults -h "$host" -P "$port" -u "$user" -N -B "$db" -e "$1"; }

assert_exit 0 "$SIMBA" run --mutex m -- true
my "ALTER TABLE ${prefix}waiters DROP INDEX conn_id, DROP COLUMN woken_at, DROP COLUMN gives_up_at" ||
  fail "cannot make the old table"

"$SIMBA" run --mutex m -- sh -c 'touch "$0"; sleep 2' "$T/held" &
holder=$!
wait_file "$T/held" 10
"$SIMBA" run --mutex m --timeout 1m -- true &
waiter=$!
given_up() { [[ $("$SIMBA" status --mutex m --json | jq '.mutexes[0].waiters[0].gives_up_at') =~ ^[0-9]+$ ]]; }
wait_for 10 given_up
wait "$holder" "$waiter" || fail "a run failed on the upgraded table"
[[ $(my "SHOW COLUMNS FROM ${prefix}waiters LIKE 'woken_at'") == woken_at* ]] || fail "no woken_at"
