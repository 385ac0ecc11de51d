# shellcheck shell=bash
# Shared helper for the end-to-end tests: source it first.
#
#   #!/usr/bin/env bash
#   source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
#   assert_exit 0 "$SIMBA" run --mutex m -- true
#
# ctest runs each tests/e2e/test_*.sh as `bash FILE` with SIMBA_BIN set to the
# built binary. Exit 0 = pass, 77 = skip, anything else = fail.
#
# Can this test run here? One check at its top (and in the backend helpers
# it calls: use_test_redis, use_test_postgres, need_users...), never a skip
# in the middle of a test:
#   needs TOOL...            each TOOL must be a command here; else skipped,
#                            naming its package (scripts/packages.sh)
#   needs_root WHY           must run as root
#   needs_backend B...       the server of scripts/test for B (redis,
#                            redis-cluster, postgres, pgbouncer, mysql) is up
#   skip WHY                 anything else the test cannot do without
#   not_applicable WHY       the test cannot apply to this machine at all
#                            (an architecture, a kernel without a feature)
# Under CI=true every one of these but not_applicable is a FAILURE: CI
# installs every tool and starts every server (scripts/test), so a skip
# there hides a test that never ran. not_applicable is the deliberate,
# named exception.
#
# Provides:
#   $SIMBA            the binary under test ($SIMBA_BIN; default build/simba)
#   $T                a fresh temp dir, removed on exit
#   SIMBA_BACKEND     exported as sqlite:$T/simba.db (override it as you like)
#   SIMBA_HOME, XDG_STATE_HOME   point into $T, so nothing touches ~/.local
#   fail MSG                      print "FAIL: MSG" on stderr, exit 1
#   skip MSG                      print "SKIP: MSG" on stderr, exit 77 (CI: fail)
#   assert_eq EXPECTED ACTUAL MSG
#   assert_exit CODE CMD...       run CMD (stdout -> $T/out, stderr -> $T/err)
#                                 and check its exit code; on mismatch show both
#   wait_for TIMEOUT_S CMD...     poll CMD every 50 ms until it succeeds, else fail
#   wait_file FILE TIMEOUT_S      wait until FILE exists
#   wait_line FILE TIMEOUT_S      wait until FILE holds a whole line (read it,
#                                 or kill its writer, only after this)
#   pid_alive PID                 true while PID runs (a zombie counts as dead)
#   pid_dead PID                  the opposite (for wait_for)
#   now_ms                        wall clock, epoch milliseconds
#   mutex_state MUTEX             held|holding|leased|transition|revoked|free, from
#                                 `simba status --mutex MUTEX --json`
#   mutex_field MUTEX FIELD       one field of MUTEX in `simba status --json`
#                                 ("null" when absent)
#   openmetrics_python            a python3 with prometheus_client's OpenMetrics
#                                 parser (python3-prometheus-client), else skip
#
# Background jobs: job control is on (set -m), so every `cmd &` gets its own
# process group; on exit, whatever is still running gets SIGTERM to its
# group, then SIGKILL after 2 s; then every process still carrying this
# test's SIMBA_E2E_TAG is killed. A failing test leaves nothing running.
# Stdin is /dev/null: simba never sees a terminal, and tests never block.

set -euo pipefail
set -m
exec </dev/null
# shellcheck source=ports.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/ports.sh"

_e2e_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
SIMBA=${SIMBA_BIN:-$_e2e_root/build/simba}
if [[ ! -x $SIMBA ]]; then
  printf 'FAIL: no simba binary at %s (set SIMBA_BIN)\n' "$SIMBA" >&2
  exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/simba-e2e.XXXXXX")
# The SCRAM key cache (docs/backends/postgres.md) of this test alone, not
# the user's: a line per test server would pile up in ~/.cache.
export XDG_CACHE_HOME=$T/cache

# A clean environment: nothing from an enclosing simba (re-entry detection),
# nothing from the user's state directory.
unset SIMBA_MUTEX SIMBA_CONTENDER_ID SIMBA_OWNER_ID SIMBA_FENCING_TOKEN SIMBA_ACQUIRED_AT \
  SIMBA_TTL_MS SIMBA_TRANSITION_MS SIMBA_REDIS_PASSWORD SIMBA_HELD
# Nor the CI's job, which would be every contender's default label
# (test_ci_label): the tests expect pid@host.
unset GITHUB_ACTIONS GITLAB_CI
export SIMBA_BACKEND="sqlite:$T/simba.db"
export SIMBA_HOME="$T/home"
export XDG_STATE_HOME="$T/state"
export SIMBA_E2E_TAG="$T" # marks every process this test starts (cleanup)

_e2e_cleanup() {
  local rc=$? pids p i
  set +e
  pids=$(jobs -p)
  if [[ -n $pids ]]; then
    exec 2>/dev/null # no "Terminated" job notices after the test's verdict
    for p in $pids; do kill -TERM -- "-$p" 2>/dev/null; done
    for ((i = 0; i < 40; i++)); do
      local alive=0
      for p in $pids; do kill -0 -- "-$p" 2>/dev/null && alive=1; done
      ((alive)) || break
      sleep 0.05
    done
    for p in $pids; do kill -KILL -- "-$p" 2>/dev/null; done
  fi
  # Sweep: anything still carrying this test's tag (a daemonized grandchild,
  # a process in a group of its own) goes too. Untag first, so that grep
  # and sed do not find themselves.
  unset SIMBA_E2E_TAG
  pids=$(grep -lzx -- "SIMBA_E2E_TAG=$T" /proc/[0-9]*/environ 2>/dev/null |
    sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p' | grep -vx -e "$$" -e "$BASHPID")
  # And anything working in the test's directory: a server that rewrote its
  # environment (redis-server's process title overwrites it, so no tag is
  # left to find), started by a part that ran in a subshell of its own.
  pids+=" $(find /proc -mindepth 2 -maxdepth 2 -name cwd \( -lname "$T" -o -lname "$T/*" \) \
    -printf '%h\n' 2>/dev/null | sed -n 's|^/proc/\([0-9]*\)$|\1|p')"
  # shellcheck disable=SC2086 # a list of pids
  pids=$(printf '%s\n' $pids | grep -vx -e "$$" -e "$BASHPID")
  if [[ -n $pids ]]; then
    exec 2>/dev/null
    # shellcheck disable=SC2086 # a list of pids
    kill -TERM $pids 2>/dev/null
    sleep 0.2
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null
  fi
  rm -rf -- "$T"
  exit "$rc"
}
trap _e2e_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}

skip() {
  if [[ ${CI:-} == true ]]; then
    fail "cannot run here: $* (under CI=true a skip is a failure: CI must run every test)"
  fi
  printf 'SKIP: %s\n' "$*" >&2
  exit 77
}

not_applicable() {
  printf 'SKIP: not applicable here: %s\n' "$*" >&2
  exit 77
}

# The package of each tool the tests run (for the message).
# shellcheck source=../../scripts/packages.sh
source "$_e2e_root/scripts/packages.sh"

needs() {
  local tool missing=()
  for tool in "$@"; do
    [[ -n ${SIMBA_TOOL_PACKAGES[$tool]:-} ]] ||
      fail "needs $tool: add it and its package to SIMBA_TOOL_PACKAGES (scripts/packages.sh)"
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool (package ${SIMBA_TOOL_PACKAGES[$tool]})")
  done
  ((${#missing[@]} == 0)) || skip "needs ${missing[*]}"
}

needs_root() {
  ((EUID == 0)) || skip "needs root: $*"
}

# needs_backend redis|redis-cluster|postgres|pgbouncer|etcd|mysql...: scripts/test
# starts these servers and exports their URIs.
needs_backend() {
  local b var
  for b in "$@"; do
    case $b in
    redis) var=SIMBA_TEST_REDIS_URI ;;
    redis-cluster) var=SIMBA_TEST_REDIS_CLUSTER_URI ;;
    postgres) var=SIMBA_TEST_POSTGRES_URI ;;
    pgbouncer) var=SIMBA_TEST_PGBOUNCER_URI ;;
    etcd) var=SIMBA_TEST_ETCD_URI ;;
    mysql) var=SIMBA_TEST_MYSQL_URI ;;
    *) fail "needs_backend: unknown backend $b" ;;
    esac
    [[ -n ${!var:-} ]] || skip "needs the $b server of scripts/test: $var is not set (scripts/test starts it and sets it)"
  done
}

assert_eq() {
  local expected=$1 actual=$2 msg=${3:-}
  [[ $expected == "$actual" ]] ||
    fail "${msg:+$msg: }expected [$expected], got [$actual]"
}

# assert_exit CODE CMD... — stdout and stderr of CMD stay in $T/out and $T/err
# for further checks.
assert_exit() {
  local expected=$1 rc=0
  shift
  "$@" >"$T/out" 2>"$T/err" || rc=$?
  if [[ $rc != "$expected" ]]; then
    {
      printf -- '--- command: %s\n' "$(printf '%q ' "$@")"
      printf -- '--- stdout:\n'
      cat -- "$T/out"
      printf -- '--- stderr:\n'
      cat -- "$T/err"
    } >&2
    fail "expected exit $expected, got $rc"
  fi
}

now_ms() {
  if [[ -n ${EPOCHREALTIME:-} ]]; then
    local us=${EPOCHREALTIME//[!0-9]/}
    printf '%s\n' "$((10#$us / 1000))"
  else
    date +%s%3N
  fi
}

# _e2e_to_ms 1.5 -> 1500 (seconds, decimals allowed)
_e2e_to_ms() {
  local s=$1 int frac
  int=${s%%.*}
  frac=
  [[ $s == *.* ]] && frac=${s#*.}
  frac=${frac}000
  frac=${frac:0:3}
  printf '%s\n' "$((10#${int:-0} * 1000 + 10#$frac))"
}

wait_for() {
  local timeout=$1 deadline
  shift
  deadline=$(($(now_ms) + $(_e2e_to_ms "$timeout")))
  until "$@" >"$T/wait_for.out" 2>&1; do
    if (($(now_ms) >= deadline)); then
      {
        printf -- '--- last output of: %s\n' "$(printf '%q ' "$@")"
        cat -- "$T/wait_for.out"
      } >&2
      fail "timed out after ${timeout}s waiting for: $*"
    fi
    sleep 0.05
  done
}

wait_file() {
  wait_for "$2" test -e "$1"
}

# watch_death PID FILE: writes PID's time of death (epoch ns) to FILE, and
# FILE.ready once it watches (run it in the background; wait for .ready).
# It waits on a pidfd (readable the moment the process exits; python3),
# else polls /proc every ~10 ms. A late wake-up only makes the recorded
# time later: information for a timing report, never the exact check.
watch_death() {
  local pid=$1 out=$2
  if python3 -c 'import os; os.pidfd_open' 2>/dev/null; then
    python3 - "$pid" "$out" <<'EOF' && return
import os, select, sys, time
pid, out = int(sys.argv[1]), sys.argv[2]
fd = os.pidfd_open(pid)
open(out + ".ready", "w").close()
select.select([fd], [], [])
with open(out + ".tmp", "w") as f:
    f.write("%d\n" % time.time_ns())
os.rename(out + ".tmp", out)
EOF
  fi
  : >"$out.ready"
  [[ -p $T/never ]] || mkfifo "$T/never" 2>/dev/null || true
  while pid_alive "$pid"; do read -rt 0.01 <>"$T/never" || true; done
  date +%s%N >"$out.tmp" && mv -- "$out.tmp" "$out"
}
# wait_line FILE TIMEOUT: until FILE holds a whole line. A shell's
# `echo x >>FILE` creates FILE before it writes to it: wait_file can return
# in between, and a kill that follows can leave FILE empty.
wait_line() {
  wait_for "$2" _e2e_has_line "$1"
}
_e2e_has_line() { # non-empty, and its last byte is a newline
  [[ -s $1 && -z $(tail -c1 -- "$1") ]]
}

# expect_follow_after_kill HOLDER WAITER: a server restart after which
# HOLDER (a simba with a 3 s lease) still runs and WAITER (writing the ms
# its CMD started to $T/late.start, its stderr in $T/late.err) still waits;
# kills HOLDER and fails unless WAITER's CMD starts within 4.5 s: after the
# lease, not after the lease and a whole quarantine (docs/safety.md).
expect_follow_after_kill() {
  local holder=$1 waiter=$2 t0 dt
  pid_alive "$holder" || fail "the holder did not outlive the restart"
  [[ ! -e $T/late.start ]] || fail "the waiter started while the holder held the mutex"
  kill -KILL "$holder"
  t0=$(now_ms)
  wait "$waiter" || fail "the waiter failed: $(cat -- "$T/late.err")"
  dt=$(($(<"$T/late.start") - t0))
  echo "the next holder started ${dt} ms after the kill -9 of the holder (lease 3 s)" >&2
  ((dt < 4500)) || fail "the next holder started ${dt} ms after the kill: a quarantine after the lease"
}

pid_alive() {
  local pid=$1 stat
  kill -0 "$pid" 2>/dev/null || return 1
  read -r stat <"/proc/$pid/stat" 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}

pid_dead() {
  ! pid_alive "$1"
}

# mutex_state MUTEX: held, transition or free ("free" when status does not
# list it, or when there is no SQLite database at all: status creates
# none). Uses the environment's SIMBA_BACKEND.
mutex_state() {
  local json
  if ! json=$("$SIMBA" status --mutex "$1" --json 2>"$T/status.err"); then
    grep -q 'no simba database at' "$T/status.err" && { echo free; return; }
    cat -- "$T/status.err" >&2
    fail "simba status --mutex $1 --json failed"
  fi
  if command -v jq >/dev/null 2>&1; then
    jq -r --arg m "$1" \
      '[.mutexes[]? | select(.mutex == $m) | .state] | first // "free"' <<<"$json"
  else
    python3 -c '
import json, sys
m = sys.argv[1]
d = json.load(sys.stdin)
print(next((x["state"] for x in d.get("mutexes", []) if x.get("mutex") == m), "free"))
' "$1" <<<"$json"
  fi
}

# mutex_field MUTEX FIELD: the raw value of FIELD (owner, fencing_token,
# ttl_remaining_ms, ...) for MUTEX in `simba status --json`; "null" when the
# mutex or the field is absent.
mutex_field() {
  local json
  json=$("$SIMBA" status --mutex "$1" --json) || fail "simba status --mutex $1 --json failed"
  if command -v jq >/dev/null 2>&1; then
    jq -r --arg m "$1" --arg f "$2" \
      '[.mutexes[]? | select(.mutex == $m) | .[$f]] | first // "null"' <<<"$json"
  else
    python3 -c '
import json, sys
m, f = sys.argv[1], sys.argv[2]
d = json.load(sys.stdin)
v = next((x.get(f) for x in d.get("mutexes", []) if x.get("mutex") == m), None)
print("null" if v is None else v)
' "$1" "$2" <<<"$json"
  fi
}

# openmetrics_python: prints a python3 that can import prometheus_client's
# OpenMetrics parser (the system's, when pyenv's has none); fails without.
openmetrics_python() {
  local p
  for p in python3 /usr/bin/python3; do
    if "$p" -c 'import prometheus_client.openmetrics.parser' 2>/dev/null; then
      printf '%s\n' "$p"
      return 0
    fi
  done
  skip "needs python3 with prometheus_client (package python3-prometheus-client)"
}

# The same test on Redis: ctest runs the files that say "# backends: sqlite
# redis" a second time with SIMBA_E2E_BACKEND=redis (CMakeLists.txt).
if [[ ${SIMBA_E2E_BACKEND:-sqlite} == redis ]]; then
  source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
  use_test_redis
fi
# ... and "redis-cluster" on the Redis Cluster of scripts/test.
if [[ ${SIMBA_E2E_BACKEND:-sqlite} == redis-cluster ]]; then
  source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
  use_test_redis_cluster
fi
# ... and "postgres" (or "pgbouncer": through PgBouncer in transaction
# mode) on PostgreSQL.
if [[ ${SIMBA_E2E_BACKEND:-sqlite} == postgres || ${SIMBA_E2E_BACKEND:-} == pgbouncer ]]; then
  source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
  use_test_postgres "$SIMBA_E2E_BACKEND"
fi
# ... and "etcd" on the etcd cluster of scripts/test, under a key prefix
# of this test's own.
if [[ ${SIMBA_E2E_BACKEND:-sqlite} == etcd ]]; then
  needs_backend etcd
  export SIMBA_BACKEND="$SIMBA_TEST_ETCD_URI/e2e-$$-$RANDOM$RANDOM"
fi
# ... and "mysql" on the MariaDB of scripts/test.
if [[ ${SIMBA_E2E_BACKEND:-sqlite} == mysql ]]; then
  source "$(dirname -- "${BASH_SOURCE[0]}")/mysql_common.sh"
  use_test_mysql
fi
