#!/usr/bin/env bash
# A backend slower than the lease: every request reaches Redis 700 ms late
# (a proxy that delays it, as a slow network would), so every acquire reply
# comes after the kill point of the lease it grants (--ttl 600ms
# --transition 200ms: 590 ms from send to kill point). CMD never starts on
# such a lease, simba asks again only after a retry period, and SIGTERM and
# SIGINT are obeyed promptly: 128+N, the mutex released. (simba once chained
# reply -> call -> reply without looking at its signals, and ran on until
# killed with -9.)
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
use_test_redis
needs python3 # the delaying proxy
[[ $SIMBA_TEST_REDIS_URI =~ ^redis://([^/:?]+):([0-9]+) ]] ||
  skip "SIMBA_TEST_REDIS_URI is not redis://host:port[...]: $SIMBA_TEST_REDIS_URI"
redis_host=${BASH_REMATCH[1]} redis_port=${BASH_REMATCH[2]}
direct_backend=$SIMBA_BACKEND # without the proxy, for status

# proxy PORTFILE HOST PORT DELAY_S: forwards 127.0.0.1:<its port> to
# HOST:PORT, each client->server chunk DELAY_S late (replies at once).
cat >"$T/proxy.py" <<'EOF'
import asyncio, os, sys

port_file, host, port, delay = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])

async def pump(reader, writer, delay):
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
    while True:
        data = await reader.read(65536)
        queue.put_nowait((loop.time() + delay, data))
        if not data:
            break
    await sender

async def handle(client_r, client_w):
    server_r, server_w = await asyncio.open_connection(host, port)
    await asyncio.gather(pump(client_r, server_w, delay), pump(server_r, client_w, 0.0),
                         return_exceptions=True)

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.sockets[0].getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    await server.serve_forever()

asyncio.run(main())
EOF
python3 "$T/proxy.py" "$T/proxy.port" "$redis_host" "$redis_port" 0.7 &
wait_file "$T/proxy.port" 10
slow_backend="redis://127.0.0.1:$(<"$T/proxy.port")/0?timeout=2s&prefix=${direct_backend##*prefix=}"

# try SIGNAL: simba waits on the slow backend; SIGNAL, 2.5 s in, ends it.
try() {
  local sig=$1 code=$2 pid t0 dt rc=0
  : >"$T/err"
  SIMBA_BACKEND=$slow_backend "$SIMBA" run --mutex m --ttl 600ms --transition 200ms -- \
    touch "$T/cmd-ran" 2>"$T/err" &
  pid=$!
  sleep 2.5
  pid_alive "$pid" || { cat -- "$T/err" >&2; fail "simba ended before the $sig"; }
  t0=$(now_ms)
  kill -"$sig" "$pid"
  # A call in flight and the release, 700 ms each (2 s at most each): 6 s
  # is ample; the old loop never ended.
  local deadline=$((t0 + 6000))
  while pid_alive "$pid" && (($(now_ms) < deadline)); do sleep 0.05; done
  if pid_alive "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    head -n 5 -- "$T/err" >&2
    fail "SIG$sig ignored: simba still ran 6 s later ($(wc -l <"$T/err") lines on stderr)"
  fi
  dt=$(($(now_ms) - t0))
  wait "$pid" || rc=$?
  echo "SIG$sig: simba exited $rc after ${dt} ms" >&2
  assert_eq "$code" "$rc" "exit status of simba after SIG$sig"
  # The scenario did happen: replies came too late.
  grep -q 'too late' "$T/err" || { cat -- "$T/err" >&2; fail "no reply came too late: the proxy did not slow the backend"; }
  [[ ! -e $T/cmd-ran ]] || fail "CMD ran on a lease whose reply came after its kill point"
  assert_eq free "$(SIMBA_BACKEND=$direct_backend mutex_state m)" "mutex after SIG$sig"
}

try TERM 143
try INT 130
