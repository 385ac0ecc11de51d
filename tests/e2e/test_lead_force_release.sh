#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the CMD script
# backends: sqlite redis postgres etcd mysql
# `simba release --force` under `simba lead`: the leader's simba sees the
# loss, stops its CMD (the kill signal reaches CMD's trap), keeps running
# and contends again; leadership moves to a CMD with a larger fencing token
# (started by either instance).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

log=$T/log
cat >"$T/cmd.sh" <<'EOF'
log=$1
read -r _ _ _ simba _ <"/proc/$PPID/stat" # the parent is simba's watchdog
echo "start $$ $simba $SIMBA_FENCING_TOKEN $(date +%s%N)" >>"$log"
trap 'trap "" TERM INT; echo "end $$ $SIMBA_FENCING_TOKEN $(date +%s%N)" >>"$log"; exit 0' TERM INT
sleep 300 &
while :; do wait; done
EOF

declare -a simbas
for i in 1 2; do
  "$SIMBA" lead --mutex m --ttl 1s --transition 1s -- sh "$T/cmd.sh" "$log" 2>"$T/err.$i" &
  simbas+=("$!")
done

count() {
  local n
  n=$(grep -c "^$1 " "$log" 2>/dev/null) || true
  printf '%s\n' "${n:-0}"
}
count_at_least() { (($(count "$1") >= $2)); }

wait_for 10 count_at_least start 1
sleep 0.5
assert_eq 1 "$(count start)" "CMD starts before the forced release"
read -r _ cmd1 _ token1 _ < <(grep '^start ' "$log")
pid_alive "$cmd1" || fail "the leader's CMD is not running"
# Held: in its transition too (the leader renews at the end of its ttl,
# later on a busy machine: "transition" once under load).
state=$(mutex_state m)
[[ $state == held || $state == transition ]] || fail "state before the forced release: $state"

t0=$(now_ms)
assert_exit 0 "$SIMBA" release --mutex m --force

# The old leader notices at its next guard (<= ttl) and stops CMD at once:
# CMD's TERM trap records its end, and it is gone.
wait_for 5 grep -q "^end $cmd1 " "$log"
wait_for 3 pid_dead "$cmd1"
echo "old CMD stopped $(($(now_ms) - t0)) ms after the forced release" >&2

# Leadership moves: a CMD with a larger token starts.
wait_for 10 count_at_least start 2
read -r _ cmd2 leader2 token2 _ < <(grep '^start ' "$log" | sed -n 2p)
echo "new CMD $cmd2 (simba $leader2) started $(($(now_ms) - t0)) ms after the forced release; token $token1 -> $token2" >&2
((token2 > token1)) || fail "fencing token did not increase: $token1 -> $token2"
[[ $cmd2 != "$cmd1" ]] || fail "no new CMD"
pid_alive "$cmd2" || fail "the new leader's CMD is not running"

# The old leader logged the loss and is still alive, contending again.
errs=("$T"/err.*)
grep -q "lost" "${errs[@]}" || { cat -- "${errs[@]}" >&2; fail "no loss warning on any stderr"; }
wait_for 5 grep -q "contending for m again" "${errs[@]}"
for p in "${simbas[@]}"; do
  pid_alive "$p" || fail "simba $p exited after the forced release (lead contends again)"
done

# And leadership is stable again: one CMD, no further starts.
sleep 1.5
assert_eq 2 "$(count start)" "CMD starts after one forced release"
pid_alive "$cmd2" || fail "the new leader's CMD stopped"
assert_eq "$token2" "$(mutex_field m fencing_token)" "fencing token in status"

