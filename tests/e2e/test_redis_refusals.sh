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

# start_proxy NAME CODE [SECONDS]: sets PROXY_PORT and PROXY_PID.
start_proxy() {
  python3 "$(dirname -- "${BASH_SOURCE[0]}")/redis_refusing_proxy.py" "$2" "$OWN_REDIS_PORT" \
    "$T/proxy.$1" "${3:-inf}" 2>"$T/proxy.$1.err" &
  PROXY_PID=$!
  wait_line "$T/proxy.$1" 60
  PROXY_PORT=$(<"$T/proxy.$1")
}
stop_proxy() {
  kill -KILL "$PROXY_PID" 2>/dev/null || true
  wait "$PROXY_PID" 2>/dev/null || true
}

# refused CODE: the checks of one refusal, with files of its own ($T/*.CODE):
# the four codes run side by side (each ~7 s, mostly waiting).
refused() {
  local code=$1 query t0 dt rc err=$T/err.$1 ran=$T/ran.$1
  # Refused all along: 69 when --timeout passes, not before; CMD not run.
  start_proxy "$code.all" "$code"
  for query in "timeout=500ms" "timeout=500ms&quarantine=off"; do
    t0=$(now_ms)
    rc=0
    SIMBA_BACKEND="redis://127.0.0.1:$PROXY_PORT/0?$query&prefix=$code:" \
      timeout -k 5 60 "$SIMBA" run --mutex m "${lease[@]}" --timeout 2s -- touch "$ran" \
      2>"$err" || rc=$?
    dt=$(($(now_ms) - t0))
    assert_eq 69 "$rc" "$code ($query): exit ($(cat -- "$err"))"
    ((dt >= 2000)) || fail "$code ($query): exit 69 after ${dt} ms, before --timeout 2s: $(cat -- "$err")"
    [[ ! -e $ran ]] || fail "$code ($query): CMD ran"
    grep -q "^simba: error: gave up waiting for m after 2s: backend unavailable: .*$code" "$err" ||
      fail "$code ($query): $(cat -- "$err")"
  done
  stop_proxy

  # Refused for 2 s, then ready: simba (no --timeout) goes on and runs CMD.
  start_proxy "$code.ready" "$code" 2
  rc=0
  SIMBA_BACKEND="redis://127.0.0.1:$PROXY_PORT/0?timeout=500ms&prefix=$code-ready:" \
    timeout -k 5 60 "$SIMBA" run --mutex m "${lease[@]}" -- touch "$ran" 2>"$err" || rc=$?
  assert_eq 0 "$rc" "$code: exit once the server was ready ($(cat -- "$err"))"
  [[ -e $ran ]] || fail "$code: CMD did not run once the server was ready: $(cat -- "$err")"
  grep -q "$code" "$err" || fail "$code: simba did not say the backend failed: $(cat -- "$err")"
  stop_proxy
}

declare -A cases
for code in LOADING BUSY MASTERDOWN TRYAGAIN; do
  refused "$code" &
  cases[$code]=$!
done
for code in LOADING BUSY MASTERDOWN TRYAGAIN; do
  wait "${cases[$code]}" || fail "$code: failed (above)"
done
