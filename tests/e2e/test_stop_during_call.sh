#!/usr/bin/env bash
# backends: sqlite redis postgres mysql
# A stop signal that comes while a call is in flight wins over the reply that
# comes after it (man simba, SIGNALS): behind a slow server, SIGTERM while a
# plain run's acquire is in flight -> CMD never starts, the lease the reply
# granted goes back, simba exits 143; SIGTERM while `run --lease`'s first
# guard is in flight -> CMD never starts, the job's lease stays kept (only
# held), 143. (simba once read its signals only after the reply had
# started CMD: CMD ran, and with a CMD that outlived the forwarded TERM
# simba exited 0.)
#
# The slow server: Redis, PostgreSQL and MySQL behind a proxy that holds
# each request naming the mutex (MySQL: its hex literal, as simba sends
# names) 1 s before passing it on (the TERM goes within a poll, 50 ms,
# of the hold); SQLite with its write lock held by another process until
# the TERM has been sent.
# CMD would show that it ran whatever simba forwards to it: simba is
# started with SIGTERM blocked, a mask CMD inherits, and CMD leaves a file.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
command -v python3 >/dev/null 2>&1 || fail "needs python3 (the slow server)"

mutex=stop$$
backend=${SIMBA_E2E_BACKEND:-sqlite}
direct=$SIMBA_BACKEND # status, without the proxy

# python3 -c "$blocked_term" CMD...: execs CMD with SIGTERM blocked (its
# children inherit the mask).
blocked_term='import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
os.execv(sys.argv[1], sys.argv[1:])'

if [[ $backend == sqlite ]]; then
  slow=$direct
  # slow_begin: another process takes SQLite's write lock until $T/go.
  slow_begin() {
    rm -f -- "$T/go" "$T/locked"
    python3 - "${direct#sqlite:}" "$T" <<'EOF' &
import os, sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN IMMEDIATE")
open(os.path.join(sys.argv[2], "locked"), "w").close()
while not os.path.exists(os.path.join(sys.argv[2], "go")):
    time.sleep(0.01)
db.execute("ROLLBACK")
EOF
    holder=$!
    wait_file "$T/locked" 20
  }
  # in_flight PID: simba waits in SQLite's busy handler (asleep, not in poll)
  in_flight() { grep -Eq '^(35|230) ' "/proc/$1/syscall" 2>/dev/null; }
  slow_end() {
    touch -- "$T/go"
    wait "$holder" || true
  }
else
  [[ $direct =~ ^([a-z]+://([^@/]*@)?)127\.0\.0\.1:([0-9]+)(.*)$ ]] ||
    fail "the test backend is not on 127.0.0.1:PORT: $direct"
  server_port=${BASH_REMATCH[3]}
  # proxy PORTFILE PORT MARKER DELAY_S LOG: 127.0.0.1:<its port> to
  # 127.0.0.1:PORT; a request chunk that holds MARKER is passed on DELAY_S
  # late (one line in LOG when it comes), others and replies at once, in order.
  cat >"$T/proxy.py" <<'EOF'
import asyncio, os, sys

port_file, port, marker, delay, log = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), float(sys.argv[4]), sys.argv[5]

async def pump(reader, writer, slow):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def send():
        while True:
            due, data = await queue.get()
            await asyncio.sleep(max(0.0, due - loop.time()))
            if not data:
                break
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.ensure_future(send())
    last = 0.0
    while True:
        data = await reader.read(65536)
        due = loop.time()
        if slow and marker in data:
            due += delay
            with open(log, "a") as f:
                f.write("held\n")
        last = max(last, due)
        queue.put_nowait((last, data))
        if not data:
            break
    await sender

async def handle(client_r, client_w):
    server_r, server_w = await asyncio.open_connection("127.0.0.1", port)
    await asyncio.gather(pump(client_r, server_w, True), pump(server_r, client_w, False),
                         return_exceptions=True)

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.sockets[0].getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    await server.serve_forever()

asyncio.run(main())
EOF
  marker=$mutex
  [[ $backend != mysql ]] || marker=$(printf %s "$mutex" | od -An -tx1 | tr -d ' \n' | tr a-f A-F)
  : >"$T/proxy.log"
  python3 "$T/proxy.py" "$T/proxy.port" "$server_port" "$marker" 1 "$T/proxy.log" &
  wait_file "$T/proxy.port" 20
  slow="${BASH_REMATCH[1]}127.0.0.1:$(<"$T/proxy.port")${BASH_REMATCH[4]}&timeout=5s"
  slow_begin() { : >"$T/proxy.log"; }
  in_flight() { [[ -s $T/proxy.log ]]; }
  slow_end() { :; }
fi

# stopped_before_cmd WHAT SIMBA-ARGS...: simba on the slow server, SIGTERM
# while its first call is in flight; it must end 143 without starting CMD.
stopped_before_cmd() {
  local what=$1 pid rc=0
  shift
  rm -f -- "$T/ran"
  slow_begin
  SIMBA_BACKEND=$slow python3 -c "$blocked_term" "$SIMBA" "$@" -- /usr/bin/touch "$T/ran" \
    2>"$T/err" &
  pid=$!
  wait_for 30 in_flight "$pid"
  kill -TERM "$pid"
  slow_end
  wait "$pid" || rc=$?
  [[ ! -e $T/ran ]] || fail "$what: CMD started after the SIGTERM (simba exited $rc): $(<"$T/err")"
  assert_eq 143 "$rc" "$what: exit status of simba after the SIGTERM ($(<"$T/err"))"
}

assert_exit 0 "$SIMBA" run --mutex "$mutex" -- true # the tables exist
stopped_before_cmd "run" run --mutex "$mutex" --ttl 20s
assert_eq free "$(SIMBA_BACKEND=$direct mutex_state "$mutex")" "mutex after the stopped run"

handle=$(SIMBA_BACKEND=$slow "$SIMBA" acquire --mutex "$mutex" --ttl 30s | sed -n 's/^SIMBA_LEASE=//p')
token=$(SIMBA_BACKEND=$direct mutex_field "$mutex" fencing_token)
stopped_before_cmd "run --lease" run --lease "$handle"
assert_eq "$token" "$(SIMBA_BACKEND=$direct mutex_field "$mutex" fencing_token)" \
  "the job's lease after the stopped step"
assert_eq false "$(SIMBA_BACKEND=$direct "$SIMBA" status --mutex "$mutex" --json |
  grep -o '"guarded":[a-z]*' | cut -d: -f2)" "the job's lease is kept only held"
assert_exit 0 env SIMBA_BACKEND="$slow" "$SIMBA" release --lease "$handle"
assert_eq free "$(SIMBA_BACKEND=$direct mutex_state "$mutex")" "mutex after the job's release"
