#!/usr/bin/env bash
# Under a low file limit (ulimit -n 4 to 16) simba either runs CMD or ends
# with one error line, and leaves nothing behind: no simba-watchdog holds
# its stdout, so `x=$(simba run ...)` returns. (The watchdog once kept the
# supervisor's end of its channel open when no descriptor was free to list
# /proc/self/fd: it waited forever for simba to close it, blocking every
# signal, and held the pipe of the caller's $(...).)
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

mutex=lowfd$$
leftovers() { pgrep -f -- "--mutex $mutex --" || true; }

for n in $(seq 4 16); do
  rc_file="$T/rc.$n"
  # The pipe is the caller's $(...): cat ends once every holder of the pipe did.
  (
    code=0
    (ulimit -n "$n" && exec "$SIMBA" run --mutex "$mutex" -- true) 2>&1 || code=$?
    echo "rc=$code" >"$rc_file"
  ) | cat >"$T/out.$n" &
  reader=$!
  # Each try takes milliseconds; 30 s only on a machine kept very busy.
  wait_for 30 pid_dead "$reader"
  wait "$reader" || true
  rc=$(sed -n 's/^rc=//p' "$rc_file")
  out=$(<"$T/out.$n")
  echo "ulimit -n $n: exit $rc${out:+: $out}" >&2
  case $rc in
  0) [[ -z $out ]] || fail "ulimit -n $n: exit 0 but stderr: $out" ;;
  69 | 125)
    [[ $(wc -l <"$T/out.$n") == 1 && $out == "simba: error: "* ]] ||
      fail "ulimit -n $n: exit $rc without one error line: $out"
    ;;
  *) fail "ulimit -n $n: exit $rc: $out" ;;
  esac
  assert_eq "" "$(leftovers)" "processes left after ulimit -n $n"
done
assert_eq free "$(mutex_state "$mutex")" "the mutex after the tries"
