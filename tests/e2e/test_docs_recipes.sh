#!/usr/bin/env bash
# shellcheck disable=SC2016 # recipe lines are run by the simulated hosts' shells
# backends: sqlite redis postgres mysql etcd
# The command blocks of docs/recipes.md and README.md marked `<!-- runnable:
# NAME (tests/e2e/test_docs_recipes.sh) -->`, their lines taken from the page
# and run as printed: cron on three "hosts", CI jobs of GitHub Actions and
# GitLab CI, the systemd unit's ExecStart, `--slots`, `simba schedule`, and
# README's quick start (its output as shown there, up to times and ids).
# Only what cannot run here is replaced: the backend (the test's own), the
# scripts a recipe calls (stubs that log their runs and how many run at
# once), durations of minutes (a minute becomes 0.2 s). A marker this test
# does not know, or a marked block it cannot find, fails it, so a recipe
# cannot rot unnoticed.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

page=$_e2e_root/docs/recipes.md
[[ -f $page ]] || fail "no $page"
PATH="$(dirname -- "$SIMBA"):$PATH"
export PATH
mkdir -p "$T/bin" "$T/running"
cd "$T" || fail "cd $T"

readme=$_e2e_root/README.md
[[ -f $readme ]] || fail "no $readme"
# The markers this test runs, and nothing else of its own name.
known=" crontab ci-github ci-gitlab systemd slots schedule quickstart-hold quickstart-wait quickstart-status install-packages "
while read -r name; do
  [[ $known == *" $name "* ]] || fail "a page marks '$name' for this test, which has no case for it"
done < <(sed -nE 's/^<!-- runnable: ([a-z-]+) \(tests\/e2e\/test_docs_recipes\.sh\) -->$/\1/p' "$page" "$readme")

# block NAME [FILE]: the fenced block after the marker of NAME (in docs/recipes.md).
block() {
  awk -v marker="<!-- runnable: $1 (tests/e2e/test_docs_recipes.sh) -->" '
    $0 == marker { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "${2:-$page}"
}
# scaled: a duration of N minutes becomes N * 200 ms.
scaled() { sed -E 's/([ =])([0-9]+)m( |$)/\1\2__m\3/g' | awk '{
    while (match($0, /[0-9]+__m/)) {
      n = substr($0, RSTART, RLENGTH - 3)
      $0 = substr($0, 1, RSTART - 1) (n * 200) "ms" substr($0, RSTART + RLENGTH)
    }
    print }'; }
# here: the paths of a recipe made local (its scripts are the stubs in $T/bin).
here() { sed -e "s#/usr/local/bin/#$T/bin/#g" -e "s#/usr/bin/simba#$SIMBA#g"; }

# stub FILE SECONDS: a script that logs "start NAME COUNT OWNER" (COUNT: how
# many stubs run at that moment, itself included) and "end NAME", and runs
# SECONDS (forever when "forever", until SIGTERM).
stub() {
  cat >"$1" <<EOF
#!/bin/bash
name=\${0##*/}
mkdir "$T/running/\$\$"
trap 'rmdir "$T/running/\$\$"; echo "end \$name" >>"$T/log"; exit 143' TERM
n=\$(find "$T/running" -mindepth 1 -maxdepth 1 | wc -l)
echo "start \$name \$n \${SIMBA_OWNER_ID:-}" >>"$T/log"
if [[ $2 == forever ]]; then while :; do sleep 0.1; done; fi
sleep $2
rmdir "$T/running/\$\$"
echo "end \$name" >>"$T/log"
EOF
  chmod +x "$1"
}
starts() { grep -c "^start $1 " "$T/log" || true; }
started() { (($(starts "$1") >= $2)); } # NAME N: N runs of NAME have started (for wait_for)
most_at_once() { awk -v n="$1" '$1 == "start" && $2 == n && $3 > m { m = $3 } END { print m + 0 }' "$T/log"; }
: >"$T/log"

# ---- install: README's apt-get line is scripts/packages.sh's build list ----
# (not run: it installs; compared, so that the two cannot drift apart)
install=$(block install-packages "$readme" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta')
readme_pkgs=$(sed -n 's/^sudo apt-get install //p' <<<"$install" | tr -s ' ' '\n' | sort)
# shellcheck source=../../scripts/packages.sh
build_pkgs=$(source "$_e2e_root/scripts/packages.sh" && printf '%s\n' "${SIMBA_BUILD_PACKAGES[@]}" | sort)
assert_eq "$build_pkgs" "$readme_pkgs" "README's build packages against scripts/packages.sh's SIMBA_BUILD_PACKAGES"

# ---- cron: the same crontab on three hosts; the job runs once -------------
cron=$(block crontab)
[[ -n $cron ]] || fail "docs/recipes.md: no crontab recipe found"
grep -q '^SIMBA_BACKEND=' <<<"$cron" || fail "crontab: the recipe no longer sets SIMBA_BACKEND: update this test"
# The job lines: five time fields, a user, the command.
cron_cmd=$(grep -vE '^(#|[A-Z_]+=|$)' <<<"$cron" | awk '{ $1 = $2 = $3 = $4 = $5 = $6 = ""; sub(/^ +/, ""); print }' | here)
[[ $cron_cmd == simba\ run* ]] || fail "crontab: no simba job found: $cron_cmd"
stub "$T/bin/backup.sh" 1
for host in 1 2 3; do bash -c "$cron_cmd" >"$T/cron.$host.out" 2>&1 & done
for job in $(jobs -p); do wait "$job" || fail "crontab: a host's job failed ($?): $(cat "$T"/cron.*.out)"; done
assert_eq 1 "$(starts backup.sh)" "crontab: backups run by three hosts at the same time"
assert_exit 0 bash -c "$cron_cmd" # a host whose cron fires late, in the same window
grep -q "already ran in this window" "$T/err" || fail "crontab: a late host does not say why it ran nothing: $(cat "$T/err")"
assert_eq 1 "$(starts backup.sh)" "crontab: backups after a late host"

# ---- CI job serialization: two jobs at once, one after the other ---------
for ci in ci-github ci-gitlab; do
  lines=$(block "$ci")
  [[ -n $lines ]] || fail "docs/recipes.md: no $ci recipe found"
  grep -q 'SIMBA_BACKEND: ' <<<"$lines" || fail "$ci: the recipe no longer sets SIMBA_BACKEND: update this test"
  step=$(sed -nE 's/^ *(- run: |- )(simba .*)$/\2/p' <<<"$lines" | scaled)
  [[ $step == simba\ run\ --mutex* ]] || fail "$ci: no simba step found in: $lines"
  stub "$T/deploy.sh" 0.5
  : >"$T/log"
  for job in 1 2; do bash -ec "$step" >"$T/$ci.$job.out" 2>&1 & done
  for job in $(jobs -p); do wait "$job" || fail "$ci: a job failed ($?): $(cat "$T/$ci".*.out)"; done
  assert_eq 2 "$(starts deploy.sh)" "$ci: deployments of two jobs"
  assert_eq 1 "$(most_at_once deploy.sh)" "$ci: deployments at once"
done

# ---- systemd: the unit's ExecStart on two hosts: one daemon runs --------
unit=$(block systemd)
[[ -n $unit ]] || fail "docs/recipes.md: no systemd recipe found"
grep -q '^KillMode=mixed$' <<<"$unit" || fail "systemd: KillMode=mixed is gone: update this test"
exec_start=$(sed -n 's/^ExecStart=//p' <<<"$unit" | here)
[[ $exec_start == "$SIMBA lead "* ]] || fail "systemd: no simba lead in ExecStart: $exec_start"
stub "$T/bin/ingest-daemon" forever
: >"$T/log"
bash -c "exec $exec_start" 2>"$T/unit.1.err" &
unit1=$!
bash -c "exec $exec_start" 2>"$T/unit.2.err" &
unit2=$!
wait_for 10 grep -q '^start ingest-daemon' "$T/log"
sleep 1
assert_eq 1 "$(starts ingest-daemon)" "systemd: daemons started by two hosts"
# `systemctl stop` of the active one (KillMode=mixed: SIGTERM to simba only):
# its daemon stops, it ends by SIGTERM, and the standby takes over at once.
# The daemon's owner id is its simba's label, <pid>@<host>: the unit's pid.
active=$(awk '$1 == "start" { sub(/@.*/, "", $4); print $4 }' "$T/log")
[[ $active == "$unit1" || $active == "$unit2" ]] || fail "systemd: the daemon's owner $active is neither unit"
kill -TERM "$active"
rc=0
wait "$active" || rc=$?
assert_eq 143 "$rc" "systemd: the stopped unit's status (ends by SIGTERM: a clean stop for systemd)"
wait_for 5 started ingest-daemon 2
assert_eq 1 "$(most_at_once ingest-daemon)" "systemd: daemons at once"
kill -TERM "$unit1" "$unit2" 2>/dev/null || true
wait "$unit1" "$unit2" 2>/dev/null || true

# ---- --slots: at most two at once -----------------------------------------
slots=$(block slots)
[[ -n $slots ]] || fail "docs/recipes.md: no --slots recipe found"
run_line=$(grep '^simba run ' <<<"$slots") || fail "slots: no simba run line"
lead_line=$(grep '^simba lead ' <<<"$slots") || fail "slots: no simba lead line"
stub "$T/deploy.sh" 1
: >"$T/log"
for i in 1 2 3; do bash -c "$run_line" >"$T/slots.$i.out" 2>&1 & done
for job in $(jobs -p); do wait "$job" || fail "slots: a run failed ($?): $(cat "$T"/slots.*.out)"; done
assert_eq 3 "$(starts deploy.sh)" "slots: deploys run"
assert_eq 2 "$(most_at_once deploy.sh)" "slots: deploys at once (the 3rd waits)"
stub "$T/ingest-daemon" forever
: >"$T/log"
pids=()
for i in 1 2 3; do
  bash -c "exec $lead_line" 2>"$T/lead.$i.err" &
  pids+=($!)
done
wait_for 10 started ingest-daemon 2
sleep 1
assert_eq 2 "$(starts ingest-daemon)" "slots: active instances of three (the rest standby)"
assert_eq 2 "$(most_at_once ingest-daemon)" "slots: daemons at once"
kill -TERM "${pids[@]}"
wait "${pids[@]}" 2>/dev/null || true

# ---- schedule: two hosts, one leader, runs never overlap -------------------
schedule=$(block schedule | scaled)
[[ $schedule == "simba schedule "*"--every 1000ms"* ]] || fail "schedule: not the recipe this test knows: $schedule"
stub "$T/make-report.sh" 0.1
: >"$T/log"
pids=()
for i in 1 2; do
  bash -c "exec $schedule" 2>"$T/schedule.$i.err" &
  pids+=($!)
done
sleep 4.5
kill -TERM "${pids[@]}"
wait "${pids[@]}" 2>/dev/null || true
runs=$(starts make-report.sh)
((runs >= 2 && runs <= 6)) || fail "schedule: $runs reports in 4.5 s with --every 1s (--align): $(cat "$T/log")"
assert_eq 1 "$(most_at_once make-report.sh)" "schedule: reports at once"
assert_eq 1 "$(awk '$1 == "start" { print $4 }' "$T/log" | sort -u | wc -l)" "schedule: leaders that ran reports"

# ---- README's quick start: hold, a second one waits, status shows both ----
# shape: a line of output with what differs from run to run made general
# (times, durations, numbers, the host: the page's "myhost"), columns as one
# space.
host=$(uname -n)
shape() {
  sed -E -e "s/myhost/$host/g" -e 's/[0-9]+/N/g' -e 's/(N(ms|s|m|h|d))+/D/g' -e 's/ +/ /g; s/ $//'
}
hold=$(block quickstart-hold "$readme")
[[ $hold == *"sleep 60'" ]] || fail "quickstart: not the holding command this test knows: $hold"
wait_block=$(block quickstart-wait "$readme")
wait_cmd=$(grep -v '^#' <<<"$wait_block")
[[ $wait_cmd == "simba run --mutex demo -- "* ]] || fail "quickstart: not the waiting command this test knows: $wait_cmd"
status_block=$(block quickstart-status "$readme")
status_cmd=$(grep -v '^#' <<<"$status_block")
[[ $status_cmd == "simba status" ]] || fail "quickstart: not the status command this test knows: $status_cmd"
bash -c "${hold/sleep 60/sleep 3}" >"$T/qs.hold.out" 2>"$T/qs.hold.err" &
qs_hold=$!
wait_for 10 grep -q . "$T/qs.hold.out"
bash -c "$wait_cmd" >"$T/qs.wait.out" 2>"$T/qs.wait.err" &
qs_wait=$!
wait_line "$T/qs.wait.err" 10
assert_eq "$(sed -n 's/^# //p' <<<"$wait_block" | shape)" "$(shape <"$T/qs.wait.err")" \
  "quickstart: the second one's notice, as README shows it"
wait_for 10 bash -c "$status_cmd | grep -q '^  waiting 1\.'"
bash -c "$status_cmd" >"$T/qs.status" || fail "quickstart: simba status failed"
assert_eq "$(sed -nE 's/^# ?//p' <<<"$status_block" | shape)" "$(shape <"$T/qs.status")" \
  "quickstart: simba status, as README shows it"
wait "$qs_hold" || fail "quickstart: the holder failed: $(cat "$T/qs.hold.err")"
wait "$qs_wait" || fail "quickstart: the second one failed: $(cat "$T/qs.wait.err")"
assert_eq "I hold demo" "$(cat "$T/qs.hold.out")" "quickstart: the holder's output"
assert_eq "my turn" "$(cat "$T/qs.wait.out")" "quickstart: the second one's output"
