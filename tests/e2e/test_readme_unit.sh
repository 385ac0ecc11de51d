#!/usr/bin/env bash
# README's systemd unit ("One active instance of a daemon") is one systemd
# accepts (`systemd-analyze verify`), runs simba where the .deb installs it
# (/usr/bin/simba: CMakeLists.txt, tests/e2e/test_package.sh), and is
# Type=notify with a WatchdogSec (test_lead_sd_notify.sh: what simba sends).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs systemd-analyze

# The unit as README shows it (or docs/, should it move there), its
# programs pointed at ones that exist here.
shopt -s nullglob globstar
awk '/^# \/etc\/systemd\/system\/ingest.service$/ { on = 1; next } on && /^```$/ { exit } on' \
  "$_e2e_root/README.md" "$_e2e_root"/docs/**/*.md >"$T/ingest.service"
[[ -s $T/ingest.service ]] || fail "no '# /etc/systemd/system/ingest.service' unit in README.md or docs/"
grep -q '^Type=notify$' "$T/ingest.service" || fail "README's unit is not Type=notify"
grep -q '^WatchdogSec=' "$T/ingest.service" || fail "README's unit sets no WatchdogSec"
grep -q '^ExecStart=/usr/bin/simba lead ' "$T/ingest.service" ||
  fail "README's unit does not run /usr/bin/simba (the .deb's path)"
grep -q '^RestartPreventExitStatus=64$' "$T/ingest.service" ||
  fail "README's unit restarts simba after a usage error (exit 64)"
sed -i "s|/usr/bin/simba|$(readlink -f -- "$SIMBA")|; s|/usr/local/bin/ingest-daemon|/bin/true|" "$T/ingest.service"
: >"$T/redis.env"
sed -i "s|^EnvironmentFile=.*|EnvironmentFile=$T/redis.env|" "$T/ingest.service"
SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "$T/ingest.service" >"$T/verify.out" 2>&1 ||
  { cat -- "$T/verify.out" >&2; fail "systemd-analyze verify failed on README's unit"; }
! grep -q "ingest.service" "$T/verify.out" ||
  { cat -- "$T/verify.out" >&2; fail "systemd-analyze verify warns about README's unit"; }
