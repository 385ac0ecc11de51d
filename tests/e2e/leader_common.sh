#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the CMD script
# Sourced after common.sh by the tests of a stopped leader (test_lead_sigstop,
# test_lead_stopped_deadline, test_redis_slow_reply_deadline): a log of the
# CMDs that started, and the state of processes and of the lease.
#   write_beating_cmd FILE   a CMD (bash FILE LOG DIR) that appends
#                            "start PID SIMBA TOKEN US" to LOG (SIMBA: the
#                            parent of CMD's parent, simba's watchdog; US:
#                            epoch microseconds), then a heartbeat "US" line
#                            to DIR/beats.PID every 10 ms without a fork
#                            ($EPOCHREALTIME, read -t on a FIFO); it ignores
#                            TERM and INT, so a SIGKILL alone ends it. A CMD
#                            started while another lives (an flock on
#                            DIR/excl) records "OVERLAP PID TOKEN US".
#   starts LOG               how many CMDs started
#   starts_at_least LOG N
#   is_stopped PID           the process is stopped (SIGSTOP)
#   lease_times MUTEX        "TTL_AT TRANSITION_AT" (epoch ms), one status call
#   renewed_since MUTEX WAS  lease_times is no longer WAS

write_beating_cmd() {
  cat >"$1" <<'CMD'
trap '' TERM INT
log=$1 dir=$2
exec 9>>"$dir/excl"
flock -n 9 || echo "OVERLAP $$ $SIMBA_FENCING_TOKEN ${EPOCHREALTIME/./}" >>"$log"
read -r _ _ _ simba _ <"/proc/$PPID/stat"
echo "start $$ $simba $SIMBA_FENCING_TOKEN ${EPOCHREALTIME/./}" >>"$log"
mkfifo "$dir/fifo.$$"
exec 8<>"$dir/fifo.$$"
while :; do
  echo "${EPOCHREALTIME/./}" >>"$dir/beats.$$"
  read -r -t 0.01 -u 8 || :
done
CMD
}

starts() {
  local n
  n=$(grep -c '^start ' "$1" 2>/dev/null) || true
  printf '%s\n' "${n:-0}"
}
starts_at_least() { (($(starts "$1") >= $2)); }
is_stopped() {
  local stat
  read -r stat <"/proc/$1/stat" || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} == T ]]
}
lease_times() {
  "$SIMBA" status --mutex "$1" --json |
    jq -r --arg m "$1" '.mutexes[] | select(.mutex == $m) | "\(.ttl_at) \(.transition_at)"'
}
renewed_since() { [[ $(lease_times "$1") != "$2" ]]; }
