#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres mysql etcd
# In a CI job the default label is the job (issue 31 §5): GitHub Actions
# "$GITHUB_REPOSITORY#$GITHUB_RUN_ID/$GITHUB_JOB", GitLab CI "$CI_JOB_URL".
# status --json (label, and still the holder's host and pid), a second
# contender's waiting notice, history and CMD's SIMBA_CONTENDER_ID name
# the job; --contender-id still wins; an odd value is made to fit (a space
# becomes '_', a long one keeps its end); outside CI nothing changes.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

needs jq
host=$(hostname)
simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }

# Hold MUTEX under the environment given before the command; CMD writes its
# SIMBA_CONTENDER_ID to $T/MUTEX.label (whole: wait_file sees it only
# once written). Sets $holder.
hold() {
  local mutex=$1
  shift
  env "$@" "$SIMBA" run --mutex "$mutex" -- \
    sh -c 'printf "%s\n" "$SIMBA_CONTENDER_ID" >"$0.tmp" && mv "$0.tmp" "$0.label"
           exec sleep 60' "$T/$mutex" &
  holder=$!
  wait_file "$T/$mutex.label" 10
}

# What a second contender (not in CI) says of the holder, what status and
# history say, and what CMD got; then the holder is stopped.
check_named() {
  local mutex=$1 want=$2
  assert_eq "$want" "$(cat -- "$T/$mutex.label")" "$mutex: CMD's SIMBA_CONTENDER_ID"
  assert_exit 0 "$SIMBA" status --mutex "$mutex" --json
  assert_eq "$(jq -cn --arg l "$want" --arg h "$host" --argjson p "$holder" '[$l, $h, $p]')" \
    "$(jq -c '.mutexes[0] | [.label, .holders[0].host, .holders[0].pid]' "$T/out")" "$mutex: status --json label, host, pid"
  jq -e --arg l "$want" '.mutexes[0].owner | startswith($l + "#")' "$T/out" >/dev/null ||
    fail "$mutex: owner id $(jq .mutexes[0].owner "$T/out") is not the label plus an instance id"
  assert_exit 75 simba_bounded run --mutex "$mutex" --timeout 1s -- true
  grep -qF "simba: waiting for $mutex: held by $want since " "$T/err" ||
    fail "$mutex: the waiting notice: $(cat -- "$T/err")"
  kill -TERM "$holder"
  wait "$holder" || true
  assert_exit 0 "$SIMBA" history --mutex "$mutex" --json
  jq -e --arg l "$want" '[.events[] | select(.event == "acquired")][0].label == $l' "$T/out" \
    >/dev/null || fail "$mutex: history's acquisition: $(cat -- "$T/out")"
  assert_exit 0 "$SIMBA" history --mutex "$mutex"
  grep -qF " $mutex acquired $want" "$T/out" || fail "$mutex: history's text: $(cat -- "$T/out")"
}

github=(GITHUB_ACTIONS=true GITHUB_REPOSITORY=acme/web GITHUB_RUN_ID=9876543210 GITHUB_JOB=deploy)
hold gh "${github[@]}"
check_named gh "acme/web#9876543210/deploy"

gitlab=(GITLAB_CI=true CI_JOB_URL=https://gitlab.example.com/acme/web/-/jobs/4242)
hold gl "${gitlab[@]}"
check_named gl "https://gitlab.example.com/acme/web/-/jobs/4242"

# An odd value is made to fit, never an error: the job name's space, and
# a URL past 111 bytes keeps "..." and its end.
long="https://gitlab.example.com/$(printf 'g%.0s' {1..120})/-/jobs/77"
hold odd GITLAB_CI=true "CI_JOB_URL=$long"
check_named odd "...${long: -108}"
hold sp GITHUB_ACTIONS=true GITHUB_REPOSITORY=acme/web GITHUB_RUN_ID=1 "GITHUB_JOB=build all"
check_named sp "acme/web#1/build_all"

# --contender-id wins over the job.
env "${github[@]}" "$SIMBA" run --mutex given --contender-id mine -- \
  sh -c 'printf "%s\n" "$SIMBA_CONTENDER_ID" >"$0"' "$T/given.label"
assert_eq mine "$(cat -- "$T/given.label")" "--contender-id in a GitHub job"

# Not in CI (GITHUB_ACTIONS not "true", or a variable missing): pid@host.
hold plain GITHUB_ACTIONS=false GITHUB_REPOSITORY=acme/web GITHUB_RUN_ID=1 GITHUB_JOB=x GITLAB_CI=
check_named plain "$holder@$host"
hold partial GITHUB_ACTIONS=true GITHUB_REPOSITORY=acme/web GITHUB_JOB=x GITLAB_CI=true
check_named partial "$holder@$host"
