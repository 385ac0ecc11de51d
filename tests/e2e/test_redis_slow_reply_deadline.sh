#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the CMD script
# The owner's deadline is counted from when the renewal was SENT (DESIGN
# §4), not from when its reply came: a leader whose replies come 400 ms
# late (a proxy delays Redis's answers, not the requests: the backend's
# clock is read at once) is SIGSTOPped after a renewal's reply came back.
# Its CMD ignores SIGTERM, so only the watchdog's SIGKILL at the deadline
# ends it, and CMD's heartbeats must stop before the lease's end (the
# transition_at status shows) less the margin's clock part. A deadline
# counted from the reply's arrival would let it run 400 ms longer: past
# the lease's end, into the next leader's time. The other instance, direct
# to Redis, takes over no earlier than transition_at.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/leader_common.sh"
use_test_redis
needs python3 jq # the delaying proxy; status's fields
[[ $SIMBA_TEST_REDIS_URI =~ ^redis://([^/:?]+):([0-9]+) ]] ||
  skip "SIMBA_TEST_REDIS_URI is not redis://host:port[...]: $SIMBA_TEST_REDIS_URI"
redis_host=${BASH_REMATCH[1]} redis_port=${BASH_REMATCH[2]}
delay_ms=400

# proxy PORTFILE HOST PORT DELAY_S: forwards 127.0.0.1:<its port> to
# HOST:PORT; each server->client chunk is passed on DELAY_S after it came,
# in order; requests go through at once.
cat >"$T/proxy.py" <<'EOF'
import asyncio, os, sys

port_file, host, port, delay = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])

async def forward(reader, writer, delay):
    loop = asyncio.get_running_loop()
    try:
        while data := await reader.read(65536):
            due = loop.time() + delay
            loop.call_at(due, writer.write, data)
    finally:
        loop.call_at(loop.time() + delay, writer.close)

async def handle(client_r, client_w):
    server_r, server_w = await asyncio.open_connection(host, port)
    await asyncio.gather(forward(client_r, server_w, 0.0), forward(server_r, client_w, delay),
                         return_exceptions=True)

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.sockets[0].getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    await server.serve_forever()

asyncio.run(main())
EOF
python3 "$T/proxy.py" "$T/proxy.port" "$redis_host" "$redis_port" "0.$delay_ms" &
wait_file "$T/proxy.port" 10
slow_backend="redis://127.0.0.1:$(<"$T/proxy.port")/0?timeout=2s&prefix=${SIMBA_BACKEND##*prefix=}"

log=$T/log
# CMD: leader_common.sh's beating CMD (a SIGKILL alone ends it).
write_beating_cmd "$T/cmd.sh"


# The slow leader first; the direct one waits.
# --ttl 2s: a renewal every 2 s leaves the SIGSTOP below more than a
# second to land between a reply and the next renewal, however slowly
# status polls on a loaded machine.
lead=(lead --mutex m --ttl 2s --transition 2s -- bash "$T/cmd.sh" "$log" "$T")
SIMBA_BACKEND=$slow_backend "$SIMBA" "${lead[@]}" 2>"$T/err.1" &
leader=$!
wait_for 10 starts_at_least "$log" 1
"$SIMBA" "${lead[@]}" 2>"$T/err.2" &
other=$!
read -r _ cmd1 parent1 token1 _ < <(grep '^start ' "$log")
assert_eq "$leader" "$parent1" "parent of the first CMD (the leader behind the proxy)"

# A renewal reaches Redis (status changes) at once; its reply comes
# $delay_ms later, and the next renewal goes out 2 s after it was sent:
# stop the leader in between, once the reply moved the watchdog's deadline.
# (Stopped a little late, after the next renewal went out, its deadline is
# the one before: earlier than the lease status shows, so the test still
# passes, only it tells less.)
first=$(lease_times m)
wait_for 5 renewed_since m "$first"
sleep 0.55 # delay_ms + 150 ms
kill -STOP "$leader"
wait_for 2 is_stopped "$leader"
sleep 0.1 # a renewal sent just before the SIGSTOP has reached Redis
read -r ttl_at transition_at < <(lease_times m)
[[ $ttl_at =~ ^[0-9]+$ && $transition_at =~ ^[0-9]+$ ]] ||
  fail "no lease times in status: [$ttl_at] [$transition_at]"

wait_for $((transition_at / 1000 - $(now_ms) / 1000 + 2)) pid_dead "$cmd1"
wait_for 5 starts_at_least "$log" 2
read -r _ _ parent2 token2 start2 < <(grep '^start ' "$log" | sed -n 2p)
last_beat=$(tail -n 1 "$T/beats.$cmd1")
clock_margin_us=$(((2 + 4000 / 100) * 1000)) # 2 ms + 1% of (ttl + transition)
end_us=$((transition_at * 1000))
echo "replies ${delay_ms} ms late: old CMD's last heartbeat $(((end_us - last_beat) / 1000)) ms before transition_at; new CMD started $(((start2 - end_us) / 1000)) ms after it" >&2
((last_beat <= end_us - clock_margin_us)) ||
  fail "the stopped leader's CMD ran until $(((end_us - last_beat) / 1000)) ms before its lease's end (negative: after it); expected dead $((clock_margin_us / 1000)) ms before it (a deadline counted from the reply, not the send?)"
((start2 >= end_us)) || fail "the new CMD started $(((end_us - start2) / 1000)) ms before the old lease's end"
((start2 > last_beat)) || fail "the new CMD started before the old CMD's last heartbeat"
assert_eq "$other" "$parent2" "parent of the new CMD"
((token2 > token1)) || fail "fencing token did not increase: $token1 -> $token2"

# Both CMDs ignore SIGTERM: kill -9 ends the simbas and their CMDs at once.
kill -KILL "$leader" "$other" 2>/dev/null || true
{ wait "$leader" "$other"; } 2>/dev/null || true
