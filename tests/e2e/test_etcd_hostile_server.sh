#!/usr/bin/env bash
# A hostile or broken "etcd" gateway: an HTTP answer in chunks that never
# end (each under the 64 MiB bound) took simba 2.1 GB and 14.6 s for a
# `run --timeout 1s` (URI timeout 2s), 1 GB for a `status`. The whole of
# an answer is bounded now (etcd/http.cpp): exit 69 at once with bounded
# memory, CMD never started; an enormous Content-Length is refused before
# anything is read, a stalled answer ends at the call's deadline (status:
# 5 s, whatever the URI's timeout); an answer of arrays nested 20 million
# deep, or of 30 million values, is refused before it is parsed.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/hostile_common.sh"

# try ANNOUNCE MODE MAX_RSS_KB MAX_MS REASON COMMAND...: one simba command
# against it (URI timeout 2s).
try() {
  local announce=$1 mode=$2 max_kb=$3 max_ms=$4 reason=$5 rc kb ms
  shift 5
  hostile_start http "$announce" "$mode"
  read -r rc kb ms < <(measured "$SIMBA" "$1" \
    --backend "etcd://127.0.0.1:$HOSTILE_PORT?timeout=2s" "${@:2}" 2>"$T/err" | tail -n 1)
  echo "$announce $mode, $1: exit $rc, peak RSS ${kb} kB, ${ms} ms: $(cat -- "$T/err")" >&2
  assert_eq 69 "$rc" "simba $1's exit against '$announce' ($mode)"
  ((kb < max_kb)) || fail "peak RSS ${kb} kB against '$announce' ($mode): over ${max_kb} kB"
  ((ms < max_ms)) || fail "${ms} ms against '$announce' ($mode): over ${max_ms} ms"
  grep -q -- "$reason" "$T/err" || fail "not refused for its size: $(cat -- "$T/err")"
  [[ $(grep -c . "$T/err") == 1 || $1 == run ]] || fail "not one error line: $(cat -- "$T/err")"
  [[ ! -e $T/ran ]] || fail "CMD ran against '$announce' ($mode)"
  hostile_stop
}

try chunked stream 300000 5000 'an answer over 64 MiB' run --timeout 1s --mutex m -- touch "$T/ran"
try chunked stream 300000 5000 'an answer over 64 MiB' status
try 9999999999 stall 100000 5000 'an answer over 64 MiB' status
try 100 stall 100000 7000 'timed out' status
# 40 MB of nested arrays, under the bound: parsed into 2.8 GB, 12 s for a
# status. JSON nested deeper than any of etcd's answers is refused unread.
try nested stall 300000 5000 'an answer nested' status
# 60 MB of "0,": 30 million values, each a key read (7.6 GB, 50 s).
try flat stall 300000 5000 'an answer of more than' status
