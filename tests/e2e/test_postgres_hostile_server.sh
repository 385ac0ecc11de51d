#!/usr/bin/env bash
# A hostile or broken "PostgreSQL" (issue 36 §6): libpq took whatever
# message a server announced (a DataRow of 1 GB got a 1 GB buffer) and
# read on while bytes kept coming: against a server streaming one, simba
# took 2 GB and 154 s, deaf to its deadline and to SIGTERM. What one
# statement may receive is bounded now (postgres/connection.cpp, 256 MiB:
# a message announced larger is refused at once); a server that announces
# and stalls ends at the deadline. Exit 69 either way.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/hostile_common.sh"
"$SIMBA" --version | grep -q postgres || skip "simba was built without PostgreSQL"

# try MODE TIMEOUT MAX_RSS_KB MAX_MS [REASON]: `run --timeout 1s` against a
# server that announces a DataRow of 1,000,000,000 bytes.
try() {
  local mode=$1 timeout=$2 max_kb=$3 max_ms=$4 reason=${5:-} rc kb ms
  hostile_start postgres 1000000000 "$mode"
  read -r rc kb ms < <(measured "$SIMBA" run --timeout 1s \
    --backend "postgres://u@127.0.0.1:$HOSTILE_PORT/db?sslmode=disable&timeout=$timeout" \
    --mutex m -- true 2>"$T/err")
  echo "DataRow of 1 GB, $mode: exit $rc, peak RSS ${kb} kB, ${ms} ms: $(cat -- "$T/err")" >&2
  assert_eq 69 "$rc" "simba's exit ($mode)"
  ((kb < max_kb)) || fail "peak RSS ${kb} kB ($mode): over ${max_kb} kB"
  ((ms < max_ms)) || fail "${ms} ms ($mode, timeout $timeout): over ${max_ms} ms"
  [[ -z $reason ]] || grep -q -- "$reason" "$T/err" || fail "not refused for its size: $(cat -- "$T/err")"
  hostile_stop
}

# Announced: refused at once, whether the server then stalls or streams
# (on libpq: 680 MB of the 1 GB message on a busy machine, or the call's
# deadline; before the bound, 2 GB and 154 s).
try stall 2s 100000 15000 'oversized message'
try stream 30s 100000 15000 'oversized message'
