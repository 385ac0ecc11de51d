#!/usr/bin/env bash
# backends: sqlite
# An etcd none of whose members answers is exit 69 at once, as a Redis or
# MySQL server that is down (docs/exit-codes.md: cannot connect), with one
# line naming the cluster: `run` does not wait for it for ever, `status`
# and --no-wait say so too, and doctor's connection check fails with a
# fix for etcd. One member that answers is enough.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs etcd
source "$(dirname -- "${BASH_SOURCE[0]}")/etcd_server.sh"
etcd_single_start "$T/etcd" || fail "cannot start an etcd member: $(tail -n 5 "$T/etcd/s.log")"
up=$ETCD_URI
bounded() { timeout -k 5 20 "$@"; }
assert_exit 0 bounded "$SIMBA" run --backend "$up" --mutex m -- true
etcd_cluster_stop

for cmd in "run --mutex m" "run --no-wait --mutex m" "status --all"; do
  # shellcheck disable=SC2086 # the words of cmd
  assert_exit 69 bounded "$SIMBA" $cmd --backend "$up" $([[ $cmd == run* ]] && echo -- true)
  grep -q "^simba: error: cannot reach etcd at $up/simba/: " "$T/err" || fail "$cmd: $(<"$T/err")"
done
assert_exit 69 bounded "$SIMBA" doctor --backend "$up"
grep -q "^fail *connection *cannot reach etcd .* — fix: .*(docs/backends/etcd.md)" "$T/out" ||
  fail "doctor: $(<"$T/out")"

# Another member that answers: it runs (the one down is passed over).
etcd_single_start "$T/etcd2" || fail "cannot start a second etcd member"
assert_exit 0 bounded "$SIMBA" run --backend "$up,${ETCD_URI#etcd://}" --mutex m -- true

# A first member that drops connection attempts (a host gone, a firewall;
# here a listener whose backlog is full) takes only its share of the call
# timeout: the next member is still tried in time, and it runs.
python3 - "$T/silent.port" <<'PY' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(0)
held = socket.create_connection(s.getsockname())  # fills the backlog: later SYNs are dropped
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(60)
PY
silent_pid=$!
wait_file "$T/silent.port" 10
silent="etcd://127.0.0.1:$(<"$T/silent.port"),${ETCD_URI#etcd://}"
assert_exit 0 bounded "$SIMBA" run --backend "$silent" --mutex m -- true
kill "$silent_pid" 2>/dev/null || true
etcd_cluster_stop
