#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# A signal simba forwards after CMD is gone never reaches a process group
# that took CMD's old number (pids wrap: on a busy host a new group may get
# it at any time). Between `lead`'s runs, SIGUSR1 to simba once went to
# kill(-<CMD's old pid>); here a victim that leads a group with exactly that
# number must not get it. The number is handed out on purpose: in a pid
# namespace of our own, /proc/sys/kernel/ns_last_pid names the next pid.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs_root "choosing a pid (ns_last_pid) needs a pid namespace of our own"
needs unshare
why=$(unshare --pid --fork --mount-proc true 2>&1) ||
  not_applicable "no pid namespace with its own /proc can be made (unshare: $why)"

cat >"$T/inner.sh" <<'SH'
simba=$1 dir=$2
"$simba" lead --mutex stale --restart always --restart-delay 5s -- \
  sh -c 'echo $$ >"$0"' "$dir/cmd.pid" 2>"$dir/lead.err" &
lead=$!
i=0
while [ ! -s "$dir/cmd.pid" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
old=$(cat "$dir/cmd.pid") || exit 3
# CMD is gone, reaped: its number is free.
i=0
while [ -e "/proc/$old" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
[ ! -e "/proc/$old" ] || exit 4
# The next fork gets $old; setsid makes it the leader of group $old.
echo $((old - 1)) >/proc/sys/kernel/ns_last_pid
setsid sh -c 'trap "echo USR1 >\"\$0\"; exit 0" USR1; echo $$ >"$1"; while :; do sleep 0.05; done' \
  "$dir/victim.got" "$dir/victim.pid" &
i=0
while [ ! -s "$dir/victim.pid" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
[ "$(cat "$dir/victim.pid")" = "$old" ] || { echo "victim is $(cat "$dir/victim.pid"), not $old" >&2; exit 5; }
kill -USR1 "$lead" # between runs: the restart is 5 s away
sleep 0.5
kill -TERM "$lead"
wait "$lead"
[ -e "$dir/victim.got" ] && exit 6
exit 0
SH
rc=0
unshare --pid --fork --mount-proc bash "$T/inner.sh" "$SIMBA" "$T" || rc=$?
case $rc in
0) ;;
6) fail "the group that took CMD's old number ($(<"$T/victim.pid")) got simba's SIGUSR1" ;;
*) fail "the set-up failed ($rc): $(cat -- "$T/lead.err" 2>/dev/null)" ;;
esac
