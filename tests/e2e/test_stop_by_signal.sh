#!/usr/bin/env bash
# backends: sqlite redis postgres etcd mysql
# Asked to stop by SIGTERM (systemctl stop) or SIGINT, simba forwards it; when
# CMD dies of it, simba ends by that same signal after its clean-up (systemd
# counts only exit 0 or death by its own signal as a clean stop; a shell
# still sees 128+N). The same for a waiting simba and for lead. A CMD that
# handles the signal and exits 0 makes simba exit 0. A second TERM while CMD
# still runs starts the kill sequence (kill signal, SIGKILL after
# --kill-after).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs python3

# outcome READY_FILE SIGNALS... -- SIMBA_ARGS...: starts simba, waits for
# READY_FILE, sends each signal (1 s apart), and prints how simba ended:
# "signal N" or "exit N", and how long it took after the last signal (ms).
outcome() {
  python3 - "$SIMBA" "$@" <<'PY'
import os, signal, subprocess, sys, time
simba, ready, *rest = sys.argv[1:]
sep = rest.index('--')
sigs, args = rest[:sep], rest[sep + 1:]
p = subprocess.Popen([simba] + args, stdin=subprocess.DEVNULL)
t0 = time.monotonic()
while not os.path.exists(ready):
    if p.poll() is not None or time.monotonic() - t0 > 15:
        print("not-ready", p.poll()); sys.exit(0)
    time.sleep(0.02)
for i, s in enumerate(sigs):
    if i: time.sleep(1)
    os.kill(p.pid, getattr(signal, s))
    last = time.monotonic()
try:
    rc = p.wait(timeout=20)
except subprocess.TimeoutExpired:
    p.kill(); print("hung"); sys.exit(0)
took = int((time.monotonic() - last) * 1000)
print(("signal %d" % -rc) if rc < 0 else ("exit %d" % rc), took)
PY
}

# run: CMD dies of the forwarded TERM -> simba ends by SIGTERM; nothing held.
read -r how n took < <(outcome "$T/r1" SIGTERM -- run --mutex m -- sh -c 'touch "$0"; exec sleep 30' "$T/r1")
assert_eq "signal 15" "$how $n" "run, CMD killed by the forwarded TERM"
assert_eq free "$(mutex_state m)" "mutex after run ended by SIGTERM"

# SIGINT the same way.
read -r how n took < <(outcome "$T/r2" SIGINT -- run --mutex m -- sh -c 'touch "$0"; exec sleep 30' "$T/r2")
assert_eq "signal 2" "$how $n" "run, CMD killed by the forwarded INT"

# CMD handles TERM and exits 0: simba exits 0.
read -r how n took < <(outcome "$T/r3" SIGTERM -- run --mutex m -- \
  sh -c 'trap "exit 0" TERM; touch "$0"; while :; do sleep 0.05; done' "$T/r3")
assert_eq "exit 0" "$how $n" "run, CMD exits 0 on TERM"

# lead (the systemd unit of docs/recipes.md): ends by SIGTERM.
read -r how n took < <(outcome "$T/l1" SIGTERM -- lead --mutex l -- sh -c 'touch "$0"; exec sleep 30' "$T/l1")
assert_eq "signal 15" "$how $n" "lead stopped by TERM"
assert_eq free "$(mutex_state l)" "mutex after lead ended by SIGTERM"

# A waiting simba (a standby leader, a queued run): ends by SIGTERM, holds nothing.
"$SIMBA" run --mutex w -- sh -c 'touch "$0"; exec sleep 30' "$T/holder" &
holder=$!
wait_file "$T/holder" 10
touch "$T/w-ready"
read -r how n took < <(outcome "$T/w-ready" SIGTERM -- lead --mutex w -- true)
assert_eq "signal 15" "$how $n" "a waiting lead stopped by TERM"
kill -TERM "$holder"
wait "$holder" 2>/dev/null || true

# A CMD that ignores TERM: the first TERM is forwarded and ignored; the
# second starts the kill sequence: SIGKILL after --kill-after (500ms), so
# simba exits 137 (CMD's status) about half a second after it.
read -r how n took < <(outcome "$T/r4" SIGTERM SIGTERM -- run --mutex m --transition 1s --kill-after 500ms -- \
  sh -c 'trap "" TERM; touch "$0"; while :; do sleep 0.05; done' "$T/r4")
assert_eq "exit 137" "$how $n" "a second TERM kills a CMD that ignores TERM"
((took >= 400 && took < 3000)) || fail "the kill sequence took ${took} ms after the second TERM (--kill-after 500ms)"
assert_eq free "$(mutex_state m)" "mutex after the kill sequence"
