#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres redis-cluster etcd mysql
# simba status's table fits a terminal and a scraper: on a terminal
# (a pseudo-terminal of a set width, or $COLUMNS) no line is wider than
# it, long fields cut with "~"; piped, or with --wide, every field whole.
# The COMMAND column is the command's file name; VIA says how the lease is
# held (run, lead, acquire); a waiter's --timeout end is shown (where the
# backend keeps it); a lease revoked by release --force whose CMD is still
# stopping is "revoked", a mutex with slots too (was "transition 0/2 slots").
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }
needs jq python3
host=$(hostname)

# on_terminal COLS CMD...: CMD with stdout on a pseudo-terminal COLS wide
# (TIOCSWINSZ); what it printed, on stdout. $COLUMNS as the caller has it.
cat >"$T/on_terminal.py" <<'EOF'
import fcntl, os, pty, struct, subprocess, sys, termios
cols, cmd = int(sys.argv[1]), sys.argv[2:]
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave)
os.close(slave)
out = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # EIO: the child and its terminal are gone
        break
    if not chunk:
        break
    out += chunk
sys.stdout.write(out.decode().replace("\r\n", "\n"))
sys.exit(p.wait())
EOF
on_terminal() { python3 "$T/on_terminal.py" "$@"; }
widest() { awk '{ if (length > n) n = length } END { print n + 0 }' "$1"; }

# A holder with a long label, its command a script with a long name deep
# in a long directory.
label=github-actions/deploy-production-eu-west-1-run-4711-attempt-2
dir=$T/opt/some/rather/long/directory/of/tools
mkdir -p "$dir"
script=$dir/deploy-the-whole-production-fleet.sh
printf '#!/bin/sh\ntouch "$1"\nexec sleep 60\n' >"$script"
chmod +x "$script"
"$SIMBA" run --mutex a --contender-id "$label" --ttl 20s -- "$script" "$T/a" &
holder=$!
wait_file "$T/a" 10
# A waiter that gives up in 5 minutes.
"$SIMBA" run --mutex a --contender-id patient --timeout 5m -- true &
queued() { [[ $(simba_bounded status --mutex a --json | jq '.mutexes[0].waiters | length') == 1 ]]; }
wait_for 10 queued

# Piped: whole, the file name of the command, how it is held.
simba_bounded status >"$T/piped"
grep -qE "^a +held +$label +run +$host +$holder +deploy-the-whole-production-fleet\.sh$" "$T/piped" ||
  fail "piped row of a: $(cat -- "$T/piped")"
grep -q "$dir" "$T/piped" && fail "the table shows the command's directory: $(cat -- "$T/piped")"

# The waiter's give-up time: in JSON (epoch ms), and on its line.
gives_up=$(simba_bounded status --mutex a --json | jq '.mutexes[0].waiters[0].gives_up_at')
if [[ ${SIMBA_E2E_BACKEND:-sqlite} == postgres ]]; then
  # Not kept there: it would need a column of the waiters' table.
  assert_eq null "$gives_up" "gives_up_at on PostgreSQL"
else
  [[ $gives_up =~ ^[0-9]+$ ]] || fail "no gives_up_at: $gives_up"
  left=$((gives_up - $(now_ms)))
  ((left > 240000 && left <= 300000)) || fail "gives_up_at is $left ms away, not about 5m"
  grep -qE '^  waiting 1\. patient on .*, gives up [0-9-]+T[0-9:]+Z \(in 4m[0-9]+s\)$' "$T/piped" ||
    fail "no give-up time on the waiter's line: $(cat -- "$T/piped")"
fi

# A terminal 60 wide: no line wider; the label cut, its start kept; the
# lines under a row broken, not cut.
unset COLUMNS
on_terminal 60 "$SIMBA" status >"$T/tty60" || fail "status on a terminal: $(cat -- "$T/tty60")"
(($(widest "$T/tty60") <= 60)) || fail "a line over 60 columns on a 60-column terminal: $(cat -- "$T/tty60")"
grep -qE '^a +held +github-a[a-z-]*~ ' "$T/tty60" || fail "the label is not cut: $(cat -- "$T/tty60")"
grep -q "$label" "$T/tty60" && fail "the whole label on 60 columns: $(cat -- "$T/tty60")"
grep -qE '^ +since [0-9-]+T[0-9:]+Z \(.* ago\),?$' "$T/tty60" ||
  fail "the waiter's line lost its time: $(cat -- "$T/tty60")"
# $COLUMNS wins over the terminal's width, as in ls.
COLUMNS=45 on_terminal 200 "$SIMBA" status >"$T/tty45" || fail "COLUMNS=45: $(cat -- "$T/tty45")"
(($(widest "$T/tty45") <= 45)) || fail "a line over \$COLUMNS=45: $(cat -- "$T/tty45")"
# --wide: whole on the terminal too.
on_terminal 60 "$SIMBA" status --wide >"$T/wide" || fail "status --wide: $(cat -- "$T/wide")"
grep -qE "^a +held +$label +run +.* deploy-the-whole-production-fleet\.sh$" "$T/wide" ||
  fail "--wide row of a: $(cat -- "$T/wide")"
kill -TERM "$holder"
wait "$holder" || true

# How a lease is held: lead, acquire.
"$SIMBA" lead --mutex l --ttl 20s -- sh -c 'touch "$0"; exec sleep 60' "$T/l" &
leader=$!
wait_file "$T/l" 10
assert_exit 0 simba_bounded acquire --mutex q --ttl 30s --contender-id job-9
lease=$(sed -n 's/^SIMBA_LEASE=//p' "$T/out")
simba_bounded status >"$T/via"
grep -qE "^l +held +$leader@$host +lead +$host +$leader +sh$" "$T/via" || fail "lead's row: $(cat -- "$T/via")"
grep -qE "^q +leased +job-9 +acquire +$host +[0-9]+ +-$" "$T/via" || fail "acquire's row: $(cat -- "$T/via")"
assert_exit 0 simba_bounded release --lease "$lease"
kill -TERM "$leader"
wait "$leader" || true

# Revoked while CMD, which ignores SIGTERM, keeps running a while: the
# mutex is "revoked" (no owner) until its lease would have ended, or until
# CMD is gone and its simba ends the lease (end_revoked). --kill-after
# keeps CMD alive past the two forces and the status, however slow they
# are (the default, 1 s, was not always enough on a Redis Cluster).
stubborn='trap "" TERM; touch "$0"; i=0; while [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done'
"$SIMBA" run --mutex r --ttl 20s --transition 16s --kill-after 15s -- sh -c "$stubborn" "$T/r" &
r_pid=$!
"$SIMBA" run --mutex s --slots 2 --ttl 20s --transition 16s --kill-after 15s -- sh -c "$stubborn" "$T/s" &
s_pid=$!
wait_file "$T/r" 10
wait_file "$T/s" 10
assert_exit 0 simba_bounded release --mutex r --force
assert_exit 0 simba_bounded release --mutex s --force
simba_bounded status >"$T/revoked"
grep -qE '^r +revoked +- ' "$T/revoked" || fail "r not revoked: $(cat -- "$T/revoked")"
grep -qE '^s +revoked +- ' "$T/revoked" || fail "s (slots) not revoked: $(cat -- "$T/revoked")"
grep -q 'slots' "$T/revoked" && fail "a slot count for revoked slots: $(cat -- "$T/revoked")"
grep -qE '^  revoked \(its command may still be stopping\), free .*\(in [0-9]+s\), token [0-9]+$' \
  "$T/revoked" || fail "no revoked line under r: $(cat -- "$T/revoked")"
grep -qE '^  slot 0: revoked \(its command may still be stopping\), free ' "$T/revoked" ||
  fail "no revoked slot line under s: $(cat -- "$T/revoked")"
kill -KILL "$r_pid" "$s_pid" 2>/dev/null || true
wait "$r_pid" "$s_pid" || true

assert_exit 0 simba_bounded status --wide --mutex r
assert_exit 64 simba_bounded status --wide --bogus
