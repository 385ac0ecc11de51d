#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the CMD script
# backends: sqlite redis postgres etcd mysql
# Two `simba lead --contender-id app` (one label, issue 12 §1): exactly one
# is leader. When the leader stops (TERM: it releases), the other takes
# over with a larger token; never two CMDs at once.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

log=$T/log
# CMD: records "start PID SIMBA TOKEN OWNER" (SIMBA: its simba, the parent of
# its parent, the watchdog), holds an exclusive flock for
# its lifetime (OVERLAP when another CMD holds it), runs until TERM.
cat >"$T/cmd.sh" <<'EOF'
log=$1 dir=$2
exec 9>>"$dir/excl"
flock -n 9 || echo "OVERLAP $$" >>"$log"
read -r _ _ _ simba _ <"/proc/$PPID/stat"
echo "start $$ $simba $SIMBA_FENCING_TOKEN $SIMBA_OWNER_ID" >>"$log"
trap 'echo "end $$" >>"$log"; exit 0' TERM INT
while :; do sleep 0.1; done
EOF

# A transition of 2 s: the leader's renewal, sent at the end of its ttl,
# has half the transition to come back before CMD is stopped (a stable
# leader then restarts CMD: on etcd under load, 1 s was not enough). The
# hand-over below is a release: the transition costs no time there.
declare -a simbas
for i in 1 2; do
  "$SIMBA" lead --mutex m --contender-id app --ttl 1s --transition 2s -- sh "$T/cmd.sh" "$log" "$T" \
    2>"$T/err.$i" &
  simbas+=("$!")
done

starts() {
  local n
  n=$(grep -c '^start ' "$log" 2>/dev/null) || true
  printf '%s\n' "${n:-0}"
}
starts_at_least() { (($(starts) >= $1)); }
alive_cmds() {
  local n=0 pid
  while read -r _ pid _; do
    pid_alive "$pid" && n=$((n + 1))
  done < <(grep '^start ' "$log" 2>/dev/null || true)
  printf '%s\n' "$n"
}
one_leader_for() { # MS
  local end=$(($(now_ms) + $1)) n
  while (($(now_ms) < end)); do
    n=$(alive_cmds)
    [[ $n == 1 ]] || { cat -- "$log" >&2; fail "$n CMDs of 'simba lead --contender-id app' at once (expected 1)"; }
    sleep 0.1
  done
}

wait_for 10 starts_at_least 1
# Several ttls, and a try of the other instance (every ttl + transition
# or so): its tries must renew nothing of the lease.
one_leader_for 4500
assert_eq 1 "$(starts)" "CMD starts over 4.5 s with a stable leader"
! grep -q '^OVERLAP' "$log" || { cat -- "$log" >&2; fail "two CMDs ran at once"; }

read -r _ cmd1 leader token1 owner1 < <(grep '^start ' "$log")
[[ $owner1 == app#* ]] || fail "the leader's SIMBA_OWNER_ID [$owner1] is not app#..."
assert_eq "$owner1" "$(mutex_field m owner)" "owner in status"
assert_eq app "$(mutex_field m label)" "label in status"

kill -TERM "$leader"
wait_for 5 pid_dead "$cmd1"
wait_for 10 starts_at_least 2
read -r _ _ leader2 token2 owner2 < <(grep '^start ' "$log" | sed -n 2p)
[[ $leader2 != "$leader" ]] || fail "the stopped leader started CMD again"
[[ $owner2 == app#* && $owner2 != "$owner1" ]] || fail "new leader's owner id [$owner2] (old $owner1)"
((token2 > token1)) || fail "fencing token did not increase: $token1 -> $token2"
one_leader_for 2000
! grep -q '^OVERLAP' "$log" || { cat -- "$log" >&2; fail "two CMDs ran at once"; }
