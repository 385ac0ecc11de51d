# shellcheck shell=bash
# Shared by the hostile-server tests (source it after common.sh):
#
#   hostile_start PROTOCOL ANNOUNCE MODE   a hostile_server.py of the test's
#                        own (see there); sets HOSTILE_PORT and HOSTILE_PID
#   hostile_stop         stops it
#   measured CMD...      runs CMD (with a 3 GB address-space limit, so that
#                        an unbounded client cannot take the host down) and
#                        prints "EXIT PEAK_RSS_KB MS" (the peak of CMD and
#                        its children, ru_maxrss); killed after 120 s
command -v python3 >/dev/null 2>&1 || skip "needs python3 (the fake server)"

hostile_start() {
  rm -f -- "$T/hostile.port"
  python3 "$(dirname -- "${BASH_SOURCE[0]}")/hostile_server.py" "$@" "$T/hostile.port" &
  HOSTILE_PID=$!
  wait_file "$T/hostile.port" 10
  HOSTILE_PORT=$(<"$T/hostile.port")
}

hostile_stop() {
  kill "$HOSTILE_PID" 2>/dev/null || true
  { wait "$HOSTILE_PID"; } 2>/dev/null || true # no "Terminated" job notice
}

measured() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys, time
limit = 3 << 30
t0 = time.monotonic()
try:
    rc = subprocess.call(sys.argv[1:], timeout=120, preexec_fn=lambda: resource.setrlimit(
        resource.RLIMIT_AS, (limit, limit)))
except subprocess.TimeoutExpired:
    rc = "killed-after-120s"
ms = int((time.monotonic() - t0) * 1000)
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, ms)
PY
}
