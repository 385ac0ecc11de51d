#!/usr/bin/env bash
# A fake "MySQL" that misbehaves during the handshake (issue 34): a
# truncated greeting, a connection cut mid-packet, an ERR instead of the
# greeting or after the login, an authentication method simba does not
# speak (client_ed25519, caching_sha2_password), an old protocol. Each is
# a clear exit 69 well within the call's timeout (nothing hangs), and the
# password is never printed; a server that never answers ends at the
# URI's timeout.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs python3
secret=fake-mysql-secret-pw

# try MODE REASON [MAX_MS]: simba against the fake server in MODE exits 69
# within MAX_MS (3000; its timeout is 5 s unless the mode is silent) saying
# REASON.
try() {
  local mode=$1 reason=$2 max=${3:-3000} timeout=5s start ms
  [[ $mode == silent ]] && timeout=1s
  rm -f -- "$T/port"
  python3 "$(dirname -- "${BASH_SOURCE[0]}")/mysql_fake_server.py" "$mode" "$T/port" &
  local pid=$!
  wait_file "$T/port" 10
  start=$(date +%s%N)
  assert_exit 69 "$SIMBA" run --timeout 1s --mutex m \
    --backend "mysql://u:$secret@127.0.0.1:$(<"$T/port")/db?tls=disable&timeout=$timeout" -- true
  ms=$((($(date +%s%N) - start) / 1000000))
  kill "$pid" 2>/dev/null || true
  { wait "$pid"; } 2>/dev/null || true
  echo "$mode: ${ms} ms: $(cat -- "$T/err")" >&2
  ((ms < max)) || fail "$mode: ${ms} ms, not refused in time"
  grep -qF -- "$reason" "$T/err" || fail "$mode: not the reason '$reason': $(cat -- "$T/err")"
  ! grep -qF -- "$secret" "$T/out" "$T/err" || fail "$mode: the password was printed"
}

try truncated "a truncated greeting"
try cut "closed"
try error-greeting "ERROR 1040 (08004): Too many connections"
try error-login "ERROR 1045 (28000): Access denied"
try ed25519 "'client_ed25519', which simba does not speak"
# ... and what lets it in, on MariaDB as on MySQL
try ed25519 "ALTER USER ... IDENTIFIED BY '...' (MariaDB) or IDENTIFIED WITH mysql_native_password BY '...' (MySQL"
try caching-sha2 "'caching_sha2_password', which simba does not speak"
try old-protocol "protocol 9, not 10"
try silent "no answer from MySQL" 2500

# The same password from the environment is not printed either.
rm -f -- "$T/port"
python3 "$(dirname -- "${BASH_SOURCE[0]}")/mysql_fake_server.py" error-login "$T/port" &
wait_file "$T/port" 10
SIMBA_MYSQL_PASSWORD=$secret assert_exit 69 "$SIMBA" run --mutex m \
  --backend "mysql://u@127.0.0.1:$(<"$T/port")/db?tls=disable" -- true
! grep -qF -- "$secret" "$T/out" "$T/err" || fail "the password from the environment was printed"

# A result set whose rows never end (5 bytes each on the wire): simba kept
# them all up to the 256 MiB bound of what one query may receive, each row
# costing a vector and a string (3.8 GB), and read on past its deadline
# while bytes came (70 s for a run --timeout 1s, a URI timeout of 30 s).
# OK packets that each say "more results" without end took 1 GB in 3 s.
# Now what is kept counts what it costs, and the deadline holds while
# packets come: exit 69 within the URI's timeout, CMD never run.
source "$(dirname -- "${BASH_SOURCE[0]}")/hostile_common.sh"
endless() {
  local mode=$1 fake rc kb ms
  rm -f -- "$T/port" "$T/ran"
  python3 "$(dirname -- "${BASH_SOURCE[0]}")/mysql_fake_server.py" "$mode" "$T/port" &
  fake=$!
  wait_file "$T/port" 10
  read -r rc kb ms < <(measured "$SIMBA" run --timeout 1s --mutex m \
    --backend "mysql://u:$secret@127.0.0.1:$(<"$T/port")/db?tls=disable&timeout=3s" \
    -- touch "$T/ran" 2>"$T/err")
  kill "$fake" 2>/dev/null || true
  { wait "$fake"; } 2>/dev/null || true
  echo "$mode: exit $rc, peak RSS ${kb} kB, ${ms} ms: $(cat -- "$T/err")" >&2
  assert_eq 69 "$rc" "simba's exit against $mode"
  ((kb < 600000)) || fail "$mode: peak RSS ${kb} kB"
  ((ms < 8000)) || fail "$mode: ${ms} ms, past the 3 s timeout"
  [[ ! -e $T/ran ]] || fail "CMD ran against $mode"
  ! grep -qF -- "$secret" "$T/err" || fail "$mode: the password was printed"
}
endless endless-rows
endless endless-oks
