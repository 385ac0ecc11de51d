#!/usr/bin/env bash
# A Redis that answers "not now": LOADING (loading its dataset after a
# restart), BUSY (a long script), MASTERDOWN (a replica without its master),
# TRYAGAIN (a slot in migration). Each is the backend unavailable for a
# while, not a final answer: simba retries, exits 69 only when --timeout
# passes (never at once), and runs CMD once the server is ready. The
# refusals come from redis_refusing_proxy.py in front of a real
# redis-server, with the commands refused that such a server refuses
# (LOADING and MASTERDOWN answer INFO; BUSY does not): both the first
# requests of a connection (simba's checks of the server) and the scripts
# meet them. Two URIs: the default (the checks go in the first script's
# write) and quarantine=off (the checks on a round trip of their own).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
command -v python3 >/dev/null 2>&1 || fail "needs python3 (scripts/test installs it)"
start_own_redis
lease=(--ttl 1s --transition 1s)
proxy_n=0

# start_proxy CODE [SECONDS]: sets PROXY_PORT.
start_proxy() {
  proxy_n=$((proxy_n + 1))
  python3 "$(dirname -- "${BASH_SOURCE[0]}")/redis_refusing_proxy.py" "$1" "$OWN_REDIS_PORT" \
    "$T/proxy.$proxy_n" "${2:-inf}" 2>"$T/proxy.$proxy_n.err" &
  PROXY_PID=$!
  wait_line "$T/proxy.$proxy_n" 60
  PROXY_PORT=$(<"$T/proxy.$proxy_n")
}
stop_proxy() {
  kill -KILL "$PROXY_PID" 2>/dev/null || true
  wait "$PROXY_PID" 2>/dev/null || true
}

for code in LOADING BUSY MASTERDOWN TRYAGAIN; do
  # Refused all along: 69 when --timeout passes, not before; CMD not run.
  start_proxy "$code"
  for query in "timeout=500ms" "timeout=500ms&quarantine=off"; do
    export SIMBA_BACKEND="redis://127.0.0.1:$PROXY_PORT/0?$query&prefix=$code:"
    t0=$(now_ms)
    assert_exit 69 timeout -k 5 60 "$SIMBA" run --mutex m "${lease[@]}" --timeout 2s -- touch "$T/ran"
    dt=$(($(now_ms) - t0))
    ((dt >= 2000)) || fail "$code ($query): exit 69 after ${dt} ms, before --timeout 2s: $(cat -- "$T/err")"
    [[ ! -e $T/ran ]] || fail "$code ($query): CMD ran"
    grep -q "^simba: error: gave up waiting for m after 2s: backend unavailable: .*$code" "$T/err" ||
      fail "$code ($query): $(cat -- "$T/err")"
  done
  stop_proxy

  # Refused for 2 s, then ready: simba (no --timeout) goes on and runs CMD.
  start_proxy "$code" 2
  export SIMBA_BACKEND="redis://127.0.0.1:$PROXY_PORT/0?timeout=500ms&prefix=$code-ready:"
  assert_exit 0 timeout -k 5 60 "$SIMBA" run --mutex m "${lease[@]}" -- touch "$T/ran"
  [[ -e $T/ran ]] || fail "$code: CMD did not run once the server was ready: $(cat -- "$T/err")"
  grep -q "$code" "$T/err" || fail "$code: simba did not say the backend failed: $(cat -- "$T/err")"
  rm -f -- "$T/ran"
  stop_proxy
done
