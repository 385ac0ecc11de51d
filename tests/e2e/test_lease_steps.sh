#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres etcd
# The split-phase lease of a CI job, each step its own process, the handle
# passed through an env file: acquire in one process, three steps (the
# second longer than the ttl) in three others, release in a fifth. A second
# job's acquire waits all along and gets the mutex promptly after the
# release (hand-over, not its timer); the first job's handle is then stale:
# its steps exit 76 without starting CMD, its release exits 76 and leaves
# the new holder alone.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

# (mutex_field shows false as null)
guarded() { "$SIMBA" status --mutex deploy --json | grep -o '"guarded":[a-z]*' | cut -d: -f2; }
# A step of job A: a fresh process with the job's env file loaded.
step() { (set -a && . "$T/a.env" && set +a && "$@"); }

assert_exit 0 "$SIMBA" acquire --mutex deploy --ttl 3s --transition 1s \
  --contender-id job-a --env-file "$T/a.env"
[[ -z $(<"$T/out") ]] || fail "acquire --env-file printed on stdout: $(<"$T/out")"
grep -q '^SIMBA_LEASE=simba1\.' "$T/a.env" || fail "no handle in the env file: $(<"$T/a.env")"
grep -q '^SIMBA_MUTEX=deploy$' "$T/a.env" || fail "no SIMBA_MUTEX in the env file"
grep -Eq '^SIMBA_LEASE_UNTIL=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$' "$T/a.env" ||
  fail "no SIMBA_LEASE_UNTIL in the env file"
token=$(sed -n 's/^SIMBA_FENCING_TOKEN=//p' "$T/a.env")
assert_eq "$token" "$(mutex_field deploy fencing_token)" "token of the lease acquire left"
assert_eq job-a "$(mutex_field deploy label)" "label of the lease acquire left"
assert_eq false "$(guarded)" "a lease between steps is unguarded"
# (by its env file, a path of this test: not another test's job-a)
assert_eq 0 "$(pgrep -f -c -- "--env-file $T/a.env" || true)" "processes acquire left"

# A second job waits for the mutex meanwhile.
(
  rc=0
  "$SIMBA" acquire --mutex deploy --ttl 3s --transition 1s --contender-id job-b \
    --env-file "$T/b.env" 2>"$T/b.err" || rc=$?
  echo "$rc $(now_ms)" >"$T/b.done"
) &
job_b=$!

for i in 1 2 3; do
  nap=0.1
  [[ $i == 2 ]] && nap=4.5 # longer than the ttl (3 s) + transition (1 s)
  rc=0
  step sh -c '"$0" run --lease "$SIMBA_LEASE" -- sh -c "echo \$SIMBA_FENCING_TOKEN \$SIMBA_MUTEX >>\"\$0\"; \"\$1\" renew --lease \"\$SIMBA_LEASE\" >/dev/null && \"\$1\" status --json --mutex deploy >\"\$0.status\"; sleep \$2" "$1" "$0" "$2"' \
    "$SIMBA" "$T/steps" "$nap" || rc=$?
  assert_eq 0 "$rc" "exit status of step $i"
  [[ -e $T/b.done ]] && fail "job B acquired during job A (after step $i): $(<"$T/b.done")"
done
assert_eq 3 "$(grep -c "^$token deploy\$" "$T/steps")" "steps that ran under the lease"
grep -q '"guarded":true' "$T/steps.status" || fail "status during a step: $(<"$T/steps.status")"
assert_eq false "$(guarded)" "after the steps the lease is unguarded again"
# renew keeps the mark as it is: guarded during a step (above), not between.
assert_exit 0 step sh -c '"$0" renew --lease "$SIMBA_LEASE"' "$SIMBA"
assert_eq false "$(guarded)" "a lease renewed between steps stays unguarded"
assert_eq "$token" "$(mutex_field deploy fencing_token)" "token after the steps"

t0=$(now_ms)
rc=0
step sh -c '"$0" release --lease "$SIMBA_LEASE"' "$SIMBA" || rc=$?
t1=$(now_ms)
assert_eq 0 "$rc" "release of job A"
wait_line "$T/b.done" 10
read -r b_rc b_at <"$T/b.done"
assert_eq 0 "$b_rc" "job B's acquire: $(cat "$T/b.err")"
dt=$((b_at - t1))
echo "job B acquired ${dt} ms after job A's release returned (release took $((t1 - t0)) ms)" >&2
((dt < 1000)) || fail "job B got the mutex ${dt} ms after the release: not handed over"
b_token=$(sed -n 's/^SIMBA_FENCING_TOKEN=//p' "$T/b.env")
assert_eq "$b_token" "$(mutex_field deploy fencing_token)" "job B's lease"

# Job A's handle is stale now: nothing of it touches job B's lease.
step sh -c '"$0" run --lease "$SIMBA_LEASE" -- touch "$1"' "$SIMBA" "$T/stale-ran" && rc=0 || rc=$?
assert_eq 76 "$rc" "a step with a stale handle"
[[ -e $T/stale-ran ]] && fail "a step with a stale handle started its command"
step sh -c '"$0" release --lease "$SIMBA_LEASE"' "$SIMBA" 2>"$T/stale.err" && rc=0 || rc=$?
assert_eq 76 "$rc" "release with a stale handle"
grep -q "no longer held" "$T/stale.err" || fail "stale release said: $(<"$T/stale.err")"
step sh -c '"$0" renew --lease "$SIMBA_LEASE"' "$SIMBA" 2>/dev/null && rc=0 || rc=$?
assert_eq 76 "$rc" "renew with a stale handle"
assert_eq "$b_token" "$(mutex_field deploy fencing_token)" "job B's lease after A's stale calls"
assert_eq job-b "$(mutex_field deploy label)" "holder after A's stale calls"

(set -a && . "$T/b.env" && "$SIMBA" release --lease "$SIMBA_LEASE") || fail "release of job B"
assert_eq free "$(mutex_state deploy)" "after job B's release"
wait "$job_b"
