#!/usr/bin/env bash
# shellcheck disable=SC2016 # the step lines are for the simulated runners' shells
# backends: sqlite redis postgres etcd mysql
# The CI recipes of docs/recipes.md ("A lock across the steps of a CI job"), their
# lines taken from that page itself and run as the runners run them: GitHub
# Actions runs each step in a new `bash -e` with the lines of $GITHUB_ENV
# added to its environment, and the `if: always()` step after a failed
# one; GitLab CI runs before_script and script in one shell and
# after_script in another. Only the durations are scaled down (a minute of
# the page is 0.2 s here). Three jobs each: a normal one with a failing
# step, one after a runner that died holding the lease (the next job must
# outwait that lease), and one whose acquire timed out (its clean-up must
# not fail). The GitHub jobs, the GitLab jobs and the GitLab job that timed
# out run side by side (each waits seconds for a lease or a time-out), each
# in a directory and a backend namespace of its own (a database, a key or
# table prefix): the recipes' mutex is the same name in all three.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

readme=$(dirname -- "${BASH_SOURCE[0]}")/../../docs/recipes.md
PATH="$(dirname -- "$SIMBA"):$PATH"
export PATH

# in_part NAME FUNCTION: FUNCTION in a subshell whose $T is $T/NAME (its
# own steps, log and env files) and whose backend is a namespace of its
# own; the part's pid in $part_pid.
in_part() {
  (
    local base=$SIMBA_BACKEND
    T=$T/$1
    mkdir -p -- "$T" && cd "$T" || fail "$1: cd $T"
    case $base in
    sqlite:*) SIMBA_BACKEND=sqlite:$T/simba.db ;;
    *prefix=*) SIMBA_BACKEND=${base/prefix=/prefix=$1} ;;
    etcd*) SIMBA_BACKEND=$base-$1 ;;
    *) fail "no namespace of its own for part $1 on $base" ;;
    esac
    export SIMBA_BACKEND
    for step in migrate deploy; do
      # A step's work: logs its name and token; $T/fail.STEP makes it fail (3).
      printf '#!/bin/sh\necho "%s token=$SIMBA_FENCING_TOKEN" >>"%s/log"\n[ ! -e "%s/fail.%s" ] || exit 3\n' \
        "$step" "$T" "$T" "$step" >"$step.sh"
      chmod +x "$step.sh"
    done
    "$2"
  ) &
  part_pid=$!
}

# recipe_block FIRST_LINE: the page's fenced block after the line FIRST_LINE.
recipe_block() {
  awk -v first="$1" '
    index($0, first) == 1 { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$readme"
}
# scaled: a duration of the page of N minutes becomes N * 0.2 s.
scaled() { sed -E 's/--(ttl|timeout) ([0-9]+)m/--\1 \2__m/g' | awk '{
    while (match($0, /[0-9]+__m/)) {
      n = substr($0, RSTART, RLENGTH - 3)
      $0 = substr($0, 1, RSTART - 1) (n * 200) "ms" substr($0, RSTART + RLENGTH)
    }
    print }'; }

# ---- GitHub Actions -----------------------------------------------------------
github=$(recipe_block 'GitHub Actions (each step gets what the first one appended')
[[ -n $github ]] || fail "docs/recipes.md: no GitHub Actions recipe found"
mapfile -t gh_runs < <(sed -n 's/^ *run: //p' <<<"$github" | scaled)
assert_eq 4 "${#gh_runs[@]}" "GitHub: steps in the recipe (Lock, Migrate, Deploy, Unlock)"
grep -q "if: always() && env.SIMBA_LEASE != ''" <<<"$github" ||
  fail "GitHub: the Unlock step's condition changed: update this test"
echo "GitHub steps: ${gh_runs[*]}" >&2

# gh_job: one job's steps; Unlock (if: always() && env.SIMBA_LEASE != '')
# also after a failed step. Returns the first failed step's status.
gh_job() {
  export GITHUB_ENV="$T/github_env.$1"
  : >"$GITHUB_ENV"
  local rc=0 i
  for i in 0 1 2; do
    ((rc == 0)) || break
    gh_step "${gh_runs[$i]}" || rc=$?
  done
  if grep -q '^SIMBA_LEASE=.' "$GITHUB_ENV"; then
    gh_step "${gh_runs[3]}" || fail "GitHub job $1: the Unlock step failed"
  fi
  return "$rc"
}
gh_step() {
  local -a vars=()
  mapfile -t vars <"$GITHUB_ENV"
  env "${vars[@]}" bash -e -c "$1"
}

github_jobs() {
# 1. A failing Deploy step: its status, and Unlock frees the mutex.
touch fail.deploy
rc=0
gh_job normal || rc=$?
rm -f fail.deploy
assert_eq 3 "$rc" "GitHub: a failing Deploy step's status"
assert_eq free "$(mutex_state deploy-prod)" "GitHub: after the Unlock step"
token=$(sed -n 's/^SIMBA_FENCING_TOKEN=//p' "$T/github_env.normal")
assert_eq "migrate token=$token deploy token=$token" "$(tr '\n' ' ' <log | sed 's/ $//')" \
  "GitHub: the steps that ran"
# The Unlock step again (a retried job, an expired lease): 76, ignored.
gh_step "${gh_runs[3]}" 2>/dev/null || fail "GitHub: the Unlock step of a lease no longer held"

# 2. A runner that died after Lock: the next job outwaits its lease.
: >"$T/github_env.dead"
GITHUB_ENV="$T/github_env.dead" gh_step "${gh_runs[0]}" || fail "GitHub: the dead runner's Lock"
rm -f log
gh_job next || fail "GitHub: the job after a dead runner failed (its --timeout is shorter than the dead lease)"
assert_eq "migrate deploy" "$(cut -d' ' -f1 log | tr '\n' ' ' | sed 's/ $//')" \
  "GitHub: the steps of the job after a dead runner"
}

# ---- GitLab CI ------------------------------------------------------------------
gitlab=$(recipe_block 'GitLab CI (`before_script` and `script` share a shell')
[[ -n $gitlab ]] || fail "docs/recipes.md: no GitLab CI recipe found"
# section KEY: the `- ` items of KEY:, one command per line.
section() {
  awk -v key="  $1:" '
    $0 == key { on = 1; next }
    on && /^  [a-z_]+:/ { on = 0 }
    on && /^    - / { sub(/^    - /, ""); print }' <<<"$gitlab" | scaled
}
gitlab_script="$(section before_script)
$(section script)"
gitlab_after_script=$(section after_script)
[[ -n $gitlab_after_script ]] || fail "GitLab: no after_script in the recipe"
echo "GitLab script: $gitlab_script" >&2
echo "GitLab after_script: $gitlab_after_script" >&2

# gitlab_job NAME: before_script + script in one shell, after_script in
# another (in a directory of the job's own, their stderr in $T/NAME.err);
# script's status.
gitlab_job() {
  mkdir -p "$T/$1" && cp migrate.sh deploy.sh "$T/$1/" || fail "GitLab job $1: its directory"
  local rc=0
  (cd "$T/$1" && bash -e -c "$gitlab_script") 2>"$T/$1.err" || rc=$?
  (cd "$T/$1" && bash -e -c "$gitlab_after_script") 2>>"$T/$1.err" ||
    fail "GitLab job $1: after_script failed: $(<"$T/$1.err")"
  return "$rc"
}

gitlab_jobs() {
# 1. A normal job.
rm -f log
gitlab_job normal || fail "GitLab: before_script and script"
assert_eq free "$(mutex_state deploy-prod)" "GitLab: after after_script"
token=$(sed -n 's/^SIMBA_FENCING_TOKEN=//p' "$T/normal/simba.env")
assert_eq "migrate token=$token deploy token=$token" "$(tr '\n' ' ' <log | sed 's/ $//')" \
  "GitLab: the steps that ran"

# 2. A runner that died in script: the next job outwaits its lease.
mkdir -p "$T/dead" && (cd "$T/dead" && bash -e -c "$(section before_script | head -1)") ||
  fail "GitLab: the dead runner's acquire"
rm -f log
gitlab_job next || fail "GitLab: the job after a dead runner failed (its --timeout is shorter than the dead lease)"
assert_eq "migrate deploy" "$(cut -d' ' -f1 log | tr '\n' ' ' | sed 's/ $//')" \
  "GitLab: the steps of the job after a dead runner"
}

gitlab_timed_out() {
# 3. An acquire that timed out (another job holds the mutex all along):
# script fails with 75, after_script has nothing to end and succeeds.
"$SIMBA" run --mutex deploy-prod --ttl 2s -- sh -c 'touch "$0"; sleep 30' "$T/holding" &
holder=$!
wait_file "$T/holding" 10
rc=0
gitlab_job timedout || rc=$?
assert_eq 75 "$rc" "GitLab: script of a job whose acquire timed out ($(<"$T/timedout.err"))"
[[ ! -e $T/timedout/simba.env ]] || fail "GitLab: the timed-out acquire left its env file behind"
kill -TERM "$holder"
wait "$holder" 2>/dev/null || true
}

declare -A parts
for part in github_jobs gitlab_jobs gitlab_timed_out; do
  in_part "$part" "$part"
  parts[$part]=$part_pid
done
for part in github_jobs gitlab_jobs gitlab_timed_out; do
  wait "${parts[$part]}" || fail "$part failed (above)"
done
