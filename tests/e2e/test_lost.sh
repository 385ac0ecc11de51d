#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres mysql
# The holder that loses its lease says so in the history once its CMD is
# stopped ("lost", with the reason, CMD's status and how long it held it),
# and the counters acquisitions and losses (status --json, OpenMetrics)
# count each lease once:
# * release --force during a run: forced, then lost (revoked), exit 143;
# * simba stopped (SIGSTOP) past its lease, the mutex taken meanwhile:
#   expired, acquired, then lost (unrenewed) with the watchdog's 137 once
#   simba goes on; the expiry is the one loss counted;
# * the backend unreachable past the kill point (SQLite: another process
#   holds the write lock; Redis: the server stopped; PostgreSQL: the row
#   locked) and answering again within the lost event's budget: lost
#   (unrenewed), then the release of the lease that still stood; staying
#   unreachable (SQLite, PostgreSQL): no lost event, and the expiry that
#   the next acquisition finds is the loss counted;
# * the counters survive a history trim (SIMBA_HISTORY_LIMIT) and are read
#   by prometheus_client's OpenMetrics parser as counters.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

backend=${SIMBA_E2E_BACKEND:-sqlite}
needs jq python3
[[ $backend == postgres ]] && needs psql # blocks the lease row
py=$(openmetrics_python)
host=$(hostname)
events() { "$SIMBA" history --mutex "$1" --json | jq -c "[.events[] | $2]"; }
counts() { "$SIMBA" status --mutex "$1" --json | jq -c '.mutexes[0] | [.acquisitions, .losses]'; }
# A CMD that says its pid, then sleeps (dies of TERM: 143).
holder_cmd=(sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300')

# ---- release --force during a run ------------------------------------------
"$SIMBA" run --mutex f --contender-id victim --ttl 2s --transition 1s -- \
  "${holder_cmd[@]}" "$T/f.pid" &
victim=$!
wait_for 10 test -s "$T/f.pid"
sleep 0.3
"$SIMBA" release --force --mutex f -q || fail "release --force failed"
rc=0
wait "$victim" || rc=$?
assert_eq 76 "$rc" "the victim's exit status"
assert_eq "[\"acquired victim\",\"forced victim\",\"lost victim revoked 143 $host $victim sh run\"]" \
  "$(events f '"\(.event) \(.label)" + (if .event == "lost" then " \(.reason) \(.exit_code) \(.host) \(.pid) \(.command) \(.via)" else "" end)')" \
  "history of a forced release"
held=$(events f 'select(.event == "lost") | .held_ms' | jq '.[0]')
((held >= 250 && held < 5000)) || fail "the lost lease was held ${held}ms (about 300 ms expected)"
tokens=$(events f '.fencing_token' | jq -r 'unique | length')
assert_eq 1 "$tokens" "one token: the lost event names the revoked lease"
assert_eq '[1,1]' "$(counts f)" "counters after a forced release and its lost event"
assert_exit 0 "$SIMBA" history --mutex f
grep -qE "^[0-9-]+T[0-9:]+Z f lost \(revoked\) victim \($host, pid $victim, sh\), token [0-9]+, exit 143, held " "$T/out" ||
  fail "history's text: $(cat -- "$T/out")"

# ---- simba stopped past its lease; the mutex taken meanwhile ----------------
"$SIMBA" run --mutex s --contender-id sleeper --ttl 1s --transition 1s -- \
  "${holder_cmd[@]}" "$T/s.pid" &
sleeper=$!
wait_for 10 test -s "$T/s.pid"
kill -STOP "$sleeper"
wait_for 5 pid_dead "$(<"$T/s.pid")" # the watchdog's SIGKILL at the deadline
"$SIMBA" run --mutex s --contender-id taker --timeout 10s -q -- true || fail "the taker failed"
kill -CONT "$sleeper"
wait_for 10 pid_dead "$sleeper"
for _ in 1 2 3; do # the first wait may report the stop (128 + SIGSTOP)
  rc=0
  wait "$sleeper" || rc=$?
  ((rc == 128 + 19)) || break
done
assert_eq 76 "$rc" "the stopped simba's exit status"
assert_eq '["acquired sleeper","expired sleeper","acquired taker","released taker","lost sleeper unrenewed 137"]' \
  "$(events s '"\(.event) \(.label)" + (if .event == "lost" then " \(.reason) \(.exit_code)" else "" end)')" \
  "history of a holder stopped past its lease"
assert_eq '[2,1]' "$(counts s)" "counters: the expiry counted, the late lost event not again"

# ---- the backend unreachable past the kill point -------------------------------
# block / unblock / blocked_backend: per backend. A lease of 2 s + 2 s,
# kill-after 1 s: the kill point is 3 s after the acquisition.
main_backend=$SIMBA_BACKEND
case $backend in
sqlite)
  db=${SIMBA_BACKEND#sqlite:}
  block() { # another process takes the write lock until $T/unlock exists
    rm -f -- "$T/locked" "$T/unlock"
    "$py" - "$db" "$T/locked" "$T/unlock" <<'EOF' &
import os, sqlite3, sys, time
db, locked, unlock = sys.argv[1:4]
c = sqlite3.connect(db, isolation_level=None, timeout=10)
c.execute("BEGIN IMMEDIATE")
open(locked, "w").close()
while not os.path.exists(unlock):
    time.sleep(0.01)
c.execute("COMMIT")
EOF
    locker=$!
    wait_for 10 test -e "$T/locked"
  }
  unblock() {
    touch "$T/unlock"
    wait "$locker" || fail "the locking process failed"
  }
  ;;
redis)
  source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
  start_own_redis
  export SIMBA_BACKEND="redis://127.0.0.1:$OWN_REDIS_PORT/0"
  # A new server quarantines its first lease: marked new, it does not.
  "$SIMBA" doctor --init >/dev/null || fail "doctor --init refused the new server"
  "$SIMBA" run --mutex warm-up --ttl 1s --transition 1s -q -- true || fail "no warm-up"
  block() { kill -STOP "$OWN_REDIS_PID"; }
  unblock() { kill -CONT "$OWN_REDIS_PID"; }
  ;;
postgres)
  admin=${SIMBA_TEST_POSTGRES_URI%%\?*}
  prefix=${SIMBA_BACKEND##*prefix=}
  block() { # a session holds the lease row's lock
    rm -f -- "$T/pg.in" "$T/pg.out"
    mkfifo "$T/pg.in"
    psql -X -q -At "$admin" <"$T/pg.in" >"$T/pg.out" 2>&1 &
    locker=$!
    exec 7>"$T/pg.in"
    printf 'BEGIN;\nSELECT 42 FROM "%sleases" WHERE mutex = %s FOR UPDATE;\n' "$prefix" "'$1'" >&7
    wait_for 10 grep -qx 42 "$T/pg.out"
  }
  unblock() {
    printf 'COMMIT;\n' >&7
    exec 7>&-
    wait "$locker" || fail "the locking session failed: $(cat -- "$T/pg.out")"
  }
  ;;
mysql)
  prefix=${SIMBA_BACKEND##*prefix=}
  [[ $SIMBA_TEST_MYSQL_URI =~ ^mysql://([^:]*):([^@]*)@([^:/]*):([0-9]+)/([^?]*) ]] ||
    fail "the test MySQL URI is not mysql://USER:PASSWORD@HOST:PORT/DB"
  block() { # a session holds the lease row's lock
    rm -f -- "$T/my.in" "$T/my.out"
    mkfifo "$T/my.in"
    mariadb --no-defaults -N -B -n -u "${BASH_REMATCH[1]}" -p"${BASH_REMATCH[2]}" \
      -h "${BASH_REMATCH[3]}" -P "${BASH_REMATCH[4]}" "${BASH_REMATCH[5]}" \
      <"$T/my.in" >"$T/my.out" 2>&1 &
    locker=$!
    exec 7>"$T/my.in"
    printf 'BEGIN;\nSELECT 42 FROM `%sleases` WHERE mutex = '"'"'%s'"'"' FOR UPDATE;\n' \
      "$prefix" "$1" >&7
    wait_for 10 grep -qx 42 "$T/my.out"
  }
  unblock() {
    printf 'COMMIT;\n' >&7
    exec 7>&-
    wait "$locker" || fail "the locking session failed: $(cat -- "$T/my.out")"
  }
  ;;
esac

# It answers again within the lost event's budget (the CMD seen gone, then
# 0.3 s): the lost event, then the release of the lease that still stood.
"$SIMBA" run --mutex u --contender-id cut-off --ttl 2s --transition 2s --kill-after 1s -- \
  "${holder_cmd[@]}" "$T/u.pid" &
cut=$!
wait_for 10 test -s "$T/u.pid"
block u
wait_for 10 pid_dead "$(<"$T/u.pid")"
sleep 0.3
unblock
rc=0
wait "$cut" || rc=$?
assert_eq 76 "$rc" "exit status of the holder cut off from its backend"
assert_eq '["acquired cut-off","lost cut-off unrenewed 143","released cut-off 76"]' \
  "$(events u '"\(.event) \(.label)" + (if .event == "lost" then " \(.reason) \(.exit_code)" elif .event == "released" then " \(.exit_code)" else "" end)')" \
  "history of a holder whose backend answered again"
assert_eq '[1,1]' "$(counts u)" "counters: the lease that still stood counted by its lost event"

# It stays unreachable until simba has given up: no lost event (SQLite and
# PostgreSQL: nothing was applied; a Redis that had received it may apply
# it late). The next acquisition writes the expiry, the one loss counted.
if [[ $backend != redis ]]; then
  "$SIMBA" run --mutex n --contender-id unheard --ttl 2s --transition 2s --kill-after 1s -- \
    "${holder_cmd[@]}" "$T/n.pid" &
  unheard=$!
  wait_for 10 test -s "$T/n.pid"
  block n
  rc=0
  wait "$unheard" || rc=$?
  assert_eq 76 "$rc" "exit status of the holder whose backend never answered"
  # PostgreSQL (MySQL): the server's statement timeout ends what it still
  # had; SQLite has nothing in flight once simba has exited.
  [[ $backend == sqlite ]] || sleep 1
  unblock
  "$SIMBA" run --mutex n --contender-id after --timeout 10s -q -- true || fail "the next run failed"
  assert_eq '["acquired unheard","expired unheard","acquired after","released after"]' \
    "$(events n '"\(.event) \(.label)"')" "history of a holder whose lost event never reached it"
  assert_eq '[2,1]' "$(counts n)" "counters: the expiry counted"
fi

# ---- an ordinary run makes no extra call: its acquire and its release ----
export SIMBA_BACKEND=$main_backend
SIMBA_CALL_COUNT_FILE=$T/calls "$SIMBA" run --mutex o -q -- true
assert_eq 2 "$(cut -d' ' -f2 "$T/calls")" "backend calls of an uncontended run"

# ---- SIMBA_HISTORY_LIMIT=0: the lost event is not written, and not an error
SIMBA_HISTORY_LIMIT=0 "$SIMBA" run -v --mutex z --ttl 2s --transition 1s -- \
  "${holder_cmd[@]}" "$T/z.pid" 2>"$T/z.err" &
victim=$!
wait_for 10 test -s "$T/z.pid"
"$SIMBA" release --force --mutex z -q || fail "release --force of z failed"
rc=0
wait "$victim" || rc=$?
assert_eq 76 "$rc" "the exit status of a victim with SIMBA_HISTORY_LIMIT=0"
! grep -q 'is not in its history' "$T/z.err" ||
  fail "recording the loss failed with SIMBA_HISTORY_LIMIT=0: $(cat -- "$T/z.err")"

# ---- the counters outlive a history trim; OpenMetrics counters -------------
export SIMBA_HISTORY_LIMIT=2
for i in 1 2 3 4; do "$SIMBA" run --mutex f --contender-id "r$i" --timeout 10s -q -- true; done
assert_eq '["acquired r4","released r4"]' "$(events f '"\(.event) \(.label)"')" "trimmed to 2 events"
assert_eq '[5,1]' "$(counts f)" "counters after the trim"
unset SIMBA_HISTORY_LIMIT
assert_exit 0 "$SIMBA" status --all --format openmetrics
"$py" - "$T/out" f "$(counts f)" s "$(counts s)" <<'EOF' || fail "openmetrics: $(cat -- "$T/out")"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
path, args = sys.argv[1], sys.argv[2:]
families = {f.name: f for f in text_string_to_metric_families(open(path).read())}
for name in ("simba_mutex_acquisitions", "simba_mutex_losses"):
    assert families[name].type == "counter", families[name]
    assert all(s.name == name + "_total" for s in families[name].samples), families[name]
assert families["simba_mutex_held"].type == "gauge"
values = {(s.name, s.labels["mutex"]): s.value for f in families.values() for s in f.samples}
for mutex, pair in zip(args[0::2], args[1::2]):
    acquisitions, losses = json.loads(pair)
    assert values[("simba_mutex_acquisitions_total", mutex)] == acquisitions, (mutex, values)
    assert values[("simba_mutex_losses_total", mutex)] == losses, (mutex, values)
EOF
# Prometheus' text 0.0.4 (node_exporter's textfile collector): the counters
# typed as counters there too (OpenMetrics' "# TYPE x counter" without
# _total reads as untyped in a 0.0.4 parser).
assert_exit 0 "$SIMBA" status --all --format prometheus
"$py" - "$T/out" f "$(counts f)" <<'EOF' || fail "prometheus: $(cat -- "$T/out")"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
path, mutex, pair = sys.argv[1:4]
text = open(path).read()
assert "# EOF" not in text, text
families = {f.name: f for f in text_string_to_metric_families(text)}
for name in ("simba_mutex_acquisitions", "simba_mutex_losses"):
    assert families[name].type == "counter", families[name]
assert families["simba_mutex_held"].type == "gauge"
values = {(s.name, s.labels["mutex"]): s.value for f in families.values() for s in f.samples}
acquisitions, losses = json.loads(pair)
assert values[("simba_mutex_acquisitions_total", mutex)] == acquisitions, values
assert values[("simba_mutex_losses_total", mutex)] == losses, values
EOF
