#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# `simba lead` under systemd's Type=notify (issue 31 §6), against a real
# notification socket that the test reads (notify_listener.py: systemd's
# side, a bound AF_UNIX datagram socket):
#   READY=1 comes with the first STATUS, only once the backend has answered
#   (a SQLite database locked by another process: no answer, no READY);
#   STATUS says leader since ... (token N), or standby; leader is LABEL;
#   WATCHDOG=1 every WATCHDOG_USEC/2 while the backend answers, none when
#   WATCHDOG_PID is another process, and none once the backend is gone (a
#   redis-server of the test's own, killed); STOPPING=1 on SIGTERM; an
#   abstract socket ('@name') works as a path does; CMD does not get
#   NOTIFY_SOCKET (simba speaks for the service).
# README's unit: test_readme_unit.sh.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
needs python3 redis-server

listen() { # SOCKET LOG
  python3 "$_e2e_root/tests/e2e/notify_listener.py" "$1" "$2" &
  wait_for 5 grep -q BOUND "$2"
}
# The datagrams in LOG holding FIELD (e.g. WATCHDOG=1), at or after MS.
count_since() { # LOG FIELD MS
  awk -v f="$2" -v ms="$3" '$1 >= ms && index($0, f) { n++ } END { print n + 0 }' "$1"
}
first_time() { # LOG FIELD
  awk -v f="$2" 'index($0, f) { print $1; exit }' "$1"
}

# --- WATCHDOG=1 stops when the backend is gone (Redis killed) ----------------------
# Beside the SQLite parts below, in a directory ($T) and on a server of its own.
backend_gone() {
  T=$T/gone
  mkdir -p -- "$T"
  start_own_redis
  export SIMBA_BACKEND=$OWN_REDIS_URI
  # A server just started, marked new: its first lease waits no quarantine.
  assert_exit 0 "$SIMBA" doctor --init
  listen "$T/c.sock" "$T/c.log"
  NOTIFY_SOCKET=$T/c.sock WATCHDOG_USEC=400000 "$SIMBA" lead --mutex n --contender-id gamma \
    --ttl 1s --transition 1s -- sleep 600 2>"$T/gamma.err" &
  gamma=$!
  wait_for 10 grep -q READY=1 "$T/c.log"
  sleep 1.5
  gone=$(now_ms)
  kill -KILL "$OWN_REDIS_PID"
  # Pings go on while the backend answered within a lease's time (ttl 1s +
  # transition 1s + 1s of a waiter's jitter + one call, 500ms): 3.5 s.
  sleep 6
  before=$(($(count_since "$T/c.log" WATCHDOG=1 $((gone - 1000))) - $(count_since "$T/c.log" WATCHDOG=1 "$gone")))
  late=$(count_since "$T/c.log" WATCHDOG=1 $((gone + 4500)))
  echo "WATCHDOG=1: $before in the second before Redis was killed, $late from 4.5 s after" >&2
  ((before >= 3)) || fail "WATCHDOG=1: only $before in the second before Redis was killed"
  assert_eq 0 "$late" "WATCHDOG=1 from 4.5 s after the backend was gone"
  pid_alive "$gamma" || fail "simba exited when the backend went away"
  grep -qE ' STATUS=standby; the backend is failing: ' "$T/c.log" ||
    { cat -- "$T/c.log" >&2; fail "no STATUS saying the backend is failing"; }
}
backend_gone &
gone_part=$!

# --- READY only after the backend answered (SQLite, locked) --------------------
"$SIMBA" run --mutex warm-up -- true
listen "$T/a.sock" "$T/a.log"
python3 - "$T/simba.db" "$T/locked" "$T/unlocked" <<'EOF' &
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
time.sleep(2.5)
# The time before COMMIT: nobody gets an answer before it, and one read
# after it came 1 ms after a READY=1 once (this process descheduled).
unlocked = int(time.time() * 1000)
db.execute("COMMIT")
with open(sys.argv[3], "w") as f:
    f.write("%d\n" % unlocked)
time.sleep(60)
EOF
wait_file "$T/locked" 5
NOTIFY_SOCKET=$T/a.sock WATCHDOG_USEC=400000 "$SIMBA" lead --mutex n --contender-id alpha -- \
  sh -c 'env >"$0"; exec sleep 600' "$T/cmd.env" 2>"$T/alpha.err" &
alpha=$!
sleep 1.5
assert_eq 0 "$(count_since "$T/a.log" = 0)" "datagrams while the backend could not answer"
wait_for 10 grep -q READY=1 "$T/a.log"
unlocked=$(<"$T/unlocked")
ready=$(first_time "$T/a.log" READY=1)
((ready >= unlocked)) || fail "READY=1 at $ready, before the database was unlocked at $unlocked"
token=$(mutex_field n fencing_token)
grep -qE "^[0-9]+ READY=1\|STATUS=leader since 20[0-9-]{8}T[0-9:]{8}Z \(token $token\)$" "$T/a.log" ||
  { cat -- "$T/a.log" >&2; fail "no READY=1 with STATUS=leader since ... (token $token)"; }
assert_eq 1 "$(count_since "$T/a.log" READY=1 0)" "READY=1 datagrams"
wait_file "$T/cmd.env" 5
! grep -qE '^(NOTIFY_SOCKET|WATCHDOG_USEC|WATCHDOG_PID)=' "$T/cmd.env" ||
  fail "CMD got systemd's notification variables: $(grep -E 'NOTIFY|WATCHDOG' "$T/cmd.env")"

# --- WATCHDOG=1 repeats (every 200 ms) -------------------------------------------
t=$(now_ms)
sleep 2
n=$(count_since "$T/a.log" WATCHDOG=1 "$t")
echo "WATCHDOG=1: $n in 2 s (WATCHDOG_USEC=400000)" >&2
((n >= 6 && n <= 14)) || fail "WATCHDOG=1: $n in 2 s, expected about 10"

# --- a standby, on an abstract socket; WATCHDOG_PID of another process ------------
sock="@simba-e2e-$$-$RANDOM"
listen "$sock" "$T/b.log"
NOTIFY_SOCKET=$sock WATCHDOG_USEC=400000 WATCHDOG_PID=1 "$SIMBA" lead --mutex n \
  --contender-id beta -- sleep 600 2>"$T/beta.err" &
beta=$!
wait_for 10 grep -q READY=1 "$T/b.log"
grep -qE "^[0-9]+ READY=1\|STATUS=standby; leader is alpha since 20[0-9-]{8}T[0-9:]{8}Z$" "$T/b.log" ||
  { cat -- "$T/b.log" >&2; fail "no READY=1 with STATUS=standby; leader is alpha since ..."; }
sleep 1
assert_eq 0 "$(count_since "$T/b.log" WATCHDOG=1 0)" "WATCHDOG=1 with WATCHDOG_PID of another process"

# --- STOPPING=1; the standby takes over and says so (no second READY) -------------
kill -TERM "$alpha"
wait_for 10 pid_dead "$alpha"
grep -q ' STOPPING=1$' "$T/a.log" || { cat -- "$T/a.log" >&2; fail "no STOPPING=1 on SIGTERM"; }
wait_for 10 grep -qE ' STATUS=leader since .* \(token [0-9]+\)$' "$T/b.log"
assert_eq 1 "$(count_since "$T/b.log" READY=1 0)" "READY=1 datagrams of the standby that took over"
kill -TERM "$beta"
wait_for 10 pid_dead "$beta"

wait "$gone_part" || fail "WATCHDOG=1 once the backend is gone: failed (above)"
