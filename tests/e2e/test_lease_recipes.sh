#!/usr/bin/env bash
# shellcheck disable=SC2016 # the step lines are for the simulated runners' shells
# backends: sqlite redis postgres
# The CI recipes of README ("A lock across the steps of a CI job"), their
# lines run as the runners run them: GitHub Actions runs each step in a new
# `bash -e` with the lines of $GITHUB_ENV added to its environment, and the
# `if: always()` step after a failed one; GitLab CI runs before_script and
# script in one shell and after_script in another. Keep the lines below and
# README's recipes the same.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

PATH="$(dirname -- "$SIMBA"):$PATH"
export PATH
cd "$T" || fail "cd $T"
printf '#!/bin/sh\necho "$1 token=$SIMBA_FENCING_TOKEN" >>"%s/log"; exit "${2:-0}"\n' "$T" >work.sh
chmod +x work.sh

# ---- GitHub Actions -----------------------------------------------------------
export GITHUB_ENV="$T/github_env"
: >"$GITHUB_ENV"
# gh_step LINE: one step's `run:` in a fresh bash -e with $GITHUB_ENV loaded
gh_step() {
  local -a vars=()
  mapfile -t vars <"$GITHUB_ENV"
  env "${vars[@]}" bash -e -c "$1"
}
gh_step 'simba acquire --mutex deploy-prod --ttl 30s --timeout 20s --env-file "$GITHUB_ENV"' ||
  fail "GitHub: the Lock step"
gh_step 'simba run --lease "$SIMBA_LEASE" -- ./work.sh migrate' || fail "GitHub: the Migrate step"
rc=0
gh_step 'simba run --lease "$SIMBA_LEASE" -- ./work.sh deploy 3' || rc=$?
assert_eq 3 "$rc" "GitHub: a failing Deploy step's status"
assert_eq leased "$(mutex_state deploy-prod)" "GitHub: after the failed step, before the cleanup"
# if: always() && env.SIMBA_LEASE != ''
gh_step 'simba release --lease "$SIMBA_LEASE" || [ $? -eq 76 ]' || fail "GitHub: the Unlock step"
assert_eq free "$(mutex_state deploy-prod)" "GitHub: after the Unlock step"
# The Unlock step again (a retried job, an expired lease): 76, ignored.
gh_step 'simba release --lease "$SIMBA_LEASE" || [ $? -eq 76 ]' 2>/dev/null ||
  fail "GitHub: the Unlock step of a lease no longer held"
token=$(sed -n 's/^SIMBA_FENCING_TOKEN=//p' "$GITHUB_ENV")
assert_eq "migrate token=$token deploy token=$token" "$(tr '\n' ' ' <log | sed 's/ $//')" \
  "GitHub: the steps that ran"

# ---- GitLab CI ------------------------------------------------------------------
rm -f log
gitlab_script='
simba acquire --mutex deploy-prod --ttl 30s --timeout 20s --env-file simba.env
set -a; . ./simba.env; set +a
simba run --lease "$SIMBA_LEASE" -- ./work.sh migrate
simba run --lease "$SIMBA_LEASE" -- ./work.sh deploy
'
gitlab_after_script='
if [ -f simba.env ]; then . ./simba.env; simba release --lease "$SIMBA_LEASE" || [ $? -eq 76 ]; fi
'
bash -e -c "$gitlab_script" || fail "GitLab: before_script and script"
assert_eq leased "$(mutex_state deploy-prod)" "GitLab: before after_script"
bash -e -c "$gitlab_after_script" || fail "GitLab: after_script"
assert_eq free "$(mutex_state deploy-prod)" "GitLab: after after_script"
token=$(sed -n 's/^SIMBA_FENCING_TOKEN=//p' simba.env)
assert_eq "migrate token=$token deploy token=$token" "$(tr '\n' ' ' <log | sed 's/ $//')" \
  "GitLab: the steps that ran"
