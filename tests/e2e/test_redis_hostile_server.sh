#!/usr/bin/env bash
# A hostile or broken "Redis" (issue 36 §6): answering the first command
# with `*2147483647` made hiredis allocate 16 GB of array slots (and walk
# them when freed: minutes, deaf to the deadline and to SIGTERM);
# `*99999999` took 783 MB; a bulk of `$2147483647` buffered all that
# followed. Every reply is bounded now (src/backend/redis/reply_bound.hpp,
# 256 MiB): simba exits 69 within the URI's timeout, with bounded memory,
# whatever the server announces or streams; SIGTERM is obeyed within the
# call's deadline.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/hostile_common.sh"
"$SIMBA" --version | grep -q redis || skip "simba was built without Redis (hiredis)"

# try ANNOUNCE MODE TIMEOUT MAX_RSS_KB MAX_MS [REASON]: one run against it.
try() {
  local announce=$1 mode=$2 timeout=$3 max_kb=$4 max_ms=$5 reason=${6:-} rc kb ms
  hostile_start redis "$announce" "$mode"
  read -r rc kb ms < <(measured "$SIMBA" run --backend "redis://127.0.0.1:$HOSTILE_PORT?timeout=$timeout" \
    --mutex m -- true 2>"$T/err")
  echo "$announce $mode: exit $rc, peak RSS ${kb} kB, ${ms} ms: $(cat -- "$T/err")" >&2
  assert_eq 69 "$rc" "simba's exit against '$announce' ($mode)"
  ((kb < max_kb)) || fail "peak RSS ${kb} kB against '$announce' ($mode): over ${max_kb} kB"
  ((ms < max_ms)) || fail "${ms} ms against '$announce' ($mode, timeout $timeout): over ${max_ms} ms"
  [[ -z $reason ]] || grep -q -- "$reason" "$T/err" || fail "not refused for its size: $(cat -- "$T/err")"
  hostile_stop
}

# Refused at once, whatever the deadline: the slots alone pass the bound.
try '*2147483647' stall 30s 100000 10000 'a reply larger than 256 MiB'
try '*99999999' stall 30s 100000 10000 'a reply larger than 256 MiB'
try '*2147483647' stream 30s 100000 10000 'a reply larger than 256 MiB'
# A bulk that never ends: the deadline (2 s) ends it; streamed as fast as
# the server can, it is refused at the bound, long before its 30 s.
try '$2147483647' stall 2s 100000 8000
try '$2147483647' stream 30s 400000 25000 'a reply larger than 256 MiB'

# SIGTERM during such a call: simba ends within the call's deadline.
hostile_start redis '$2147483647' stall
"$SIMBA" run --backend "redis://127.0.0.1:$HOSTILE_PORT?timeout=3s" --mutex m -- touch "$T/ran" \
  2>"$T/term.err" &
pid=$!
sleep 1 # in its first call, most likely (the signal is obeyed wherever it comes)
t0=$(now_ms)
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
dt=$(($(now_ms) - t0))
echo "SIGTERM during the hostile call: exit $rc after ${dt} ms: $(cat -- "$T/term.err")" >&2
((rc != 0)) || fail "simba exited 0 after SIGTERM"
[[ ! -e $T/ran ]] || fail "CMD ran"
((dt < 8000)) || fail "simba took ${dt} ms to end after SIGTERM (deadline 3 s)"
