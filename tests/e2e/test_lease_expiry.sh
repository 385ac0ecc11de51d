#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres pgbouncer etcd mysql
# What ends a lease of simba acquire without its release: a job that never
# releases frees the mutex at ttl + transition (not before); a step with an
# expired or forced handle exits 76 and never starts CMD; a forced release
# (or release --lease) while a step runs revokes the lease: the step is
# stopped (76) and nobody acquires before the revoked lease would have
# ended. A handle of another backend is refused (64).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

# acquire NAME [options]: a job's acquire, its env file $T/NAME.env
acquire() {
  local name=$1
  shift
  "$SIMBA" acquire --mutex m --contender-id "$name" --env-file "$T/$name.env" "$@" ||
    fail "acquire $name"
}
# in_job NAME CMD...: CMD in a process with job NAME's env file loaded
in_job() { (set -a && . "$T/$1.env" && set +a && shift && "$@"); }
step_touches() { in_job "$1" sh -c '"$0" run --lease "$SIMBA_LEASE" -- touch "$1"' "$SIMBA" "$2"; }

# A job that never releases: the next acquire gets the mutex at ttl + transition.
t0=$(now_ms)
acquire a --ttl 1s --transition 1s
(
  "$SIMBA" acquire --mutex m --contender-id b --env-file "$T/b.env" --ttl 5s 2>/dev/null
  echo "$? $(now_ms)" >"$T/b.done"
) &
wait_line "$T/b.done" 10
read -r rc b_at <"$T/b.done"
assert_eq 0 "$rc" "the waiting acquire"
dt=$((b_at - t0))
echo "the next job acquired ${dt} ms after the first one's acquire" >&2
((dt >= 1900)) || fail "acquired ${dt} ms after a lease of ttl 1s + transition 1s: too early"
((dt < 5000)) || fail "acquired ${dt} ms after a lease of ttl 1s + transition 1s: too late"

# a's handle expired (and b holds the mutex): its step never starts CMD.
rc=0
step_touches a "$T/a-ran" 2>/dev/null || rc=$?
assert_eq 76 "$rc" "a step with an expired handle"
[[ -e $T/a-ran ]] && fail "a step with an expired handle started its command"
in_job b "$SIMBA" release --lease '' 2>/dev/null && fail "release --lease '' accepted"
in_job b sh -c '"$0" release --lease "$SIMBA_LEASE"' "$SIMBA" || fail "release of b"

# A lease forced between steps is freed at once (nothing runs under it):
# its next step exits 76.
acquire c --ttl 30s
assert_exit 0 "$SIMBA" release --mutex m --force
grep -q "free now" "$T/err" || fail "release --force of a lease between steps said: $(<"$T/err")"
assert_eq free "$(mutex_state m)" "after forcing a lease between steps"
rc=0
step_touches c "$T/c-ran" 2>/dev/null || rc=$?
assert_eq 76 "$rc" "a step with a forced handle"
[[ -e $T/c-ran ]] && fail "a step with a forced handle started its command"

# Forced while a step runs: revoked, the step stopped, the mutex not free
# before the revoked lease would have ended (a short transition: the wait
# for the end is the test's longest).
for how in force lease; do
  acquire "d$how" --ttl 2s --transition 1s
  in_job "d$how" sh -c '"$0" run --lease "$SIMBA_LEASE" -- sh -c "echo \$\$ >\"\$0\"; exec sleep 30" "$1"' \
    "$SIMBA" "$T/d$how.pid" 2>/dev/null &
  stepper=$!
  wait_for 10 test -s "$T/d$how.pid"
  if [[ $how == force ]]; then
    assert_exit 0 "$SIMBA" release --mutex m --force
  else
    assert_exit 0 in_job "d$how" sh -c '"$0" release --lease "$SIMBA_LEASE"' "$SIMBA"
    grep -q "revoked" "$T/err" || fail "release --lease during a step said: $(<"$T/err")"
  fi
  rc=0
  wait "$stepper" || rc=$?
  assert_eq 76 "$rc" "a step whose lease was revoked ($how)"
  pid_dead "$(<"$T/d$how.pid")" || fail "the revoked step's command still runs"
  assert_eq revoked "$(mutex_state m)" "while the revoked lease would still run ($how)"
  is_free() { [[ $(mutex_state m) == free ]]; }
  wait_for 5 is_free
done

# A handle of another backend: refused, nothing touched.
acquire e --ttl 30s
SIMBA_BACKEND="sqlite:$T/other.db" "$SIMBA" acquire --mutex m --ttl 30s >"$T/other.env" ||
  fail "acquire on the other backend"
other=$(sed -n 's/^SIMBA_LEASE=//p' "$T/other.env")
for cmd in "run --lease $other -- touch $T/other-ran" "release --lease $other" "renew --lease $other"; do
  # shellcheck disable=SC2086 # words on purpose
  assert_exit 64 "$SIMBA" $cmd
  grep -q "another backend" "$T/err" || fail "$cmd said: $(<"$T/err")"
done
[[ -e $T/other-ran ]] && fail "a step with another backend's handle started its command"
assert_eq e "$(mutex_field m label)" "holder after the foreign handle's calls"
in_job e sh -c '"$0" release --lease "$SIMBA_LEASE"' "$SIMBA" || fail "release of e"
