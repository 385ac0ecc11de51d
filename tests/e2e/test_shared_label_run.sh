#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the CMD script
# backends: sqlite redis postgres etcd mysql
# --contender-id is a label, not an identity (issue 12 §1): two `simba run`
# given the same label are two contenders. A (web1) runs; B (web1 too)
# waits for A and runs after it, with a larger token; C (web2, --no-wait)
# gets 75 while A runs. No CMD overlaps another (an flock the kernel
# drops when a CMD dies tells). A label over 111 bytes is a usage error.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

log=$T/log
# CMD NAME SECONDS: records "start NAME TOKEN OWNER LABEL", holds an
# exclusive flock for its lifetime (OVERLAP when another CMD holds it).
# SECONDS "stop": until the file stop.NAME appears (at most 30 s), so that
# the checks made while it runs do not depend on how fast the machine is
# (a 4 s CMD had ended before them once under load).
cat >"$T/cmd.sh" <<'EOF'
name=$1 secs=$2 log=$3 dir=$4
exec 9>>"$dir/excl"
flock -n 9 || echo "OVERLAP $name" >>"$log"
echo "start $name $SIMBA_FENCING_TOKEN $SIMBA_OWNER_ID $SIMBA_CONTENDER_ID" >>"$log"
: >"$dir/running.$name"
if [ "$secs" = stop ]; then
  i=0
  while [ ! -e "$dir/stop.$name" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
else
  sleep "$secs"
fi
echo "end $name" >>"$log"
EOF
run_cmd() { printf '%s\n' sh "$T/cmd.sh" "$1" "$2" "$log" "$T"; }

mapfile -t cmd_a < <(run_cmd A stop)
"$SIMBA" run --mutex m --contender-id web1 --ttl 2s --transition 1s -- "${cmd_a[@]}" 2>"$T/err.A" &
a=$!
wait_file "$T/running.A" 10

mapfile -t cmd_b < <(run_cmd B 1)
"$SIMBA" run --mutex m --contender-id web1 --ttl 2s --transition 1s -- "${cmd_b[@]}" 2>"$T/err.B" &
b=$!
sleep 0.5
[[ ! -e $T/running.B ]] || { cat -- "$log" >&2; fail "B (same label as A) ran while A runs"; }

assert_exit 75 "$SIMBA" run --mutex m --contender-id web2 --no-wait -- touch "$T/running.C"
[[ ! -e $T/running.C ]] || fail "C ran while A runs"

# A keeps its lease: B's tries renewed nothing of it (A's owner id, A's token).
read -r _ _ token_a owner_a label_a < <(grep '^start A ' "$log")
assert_eq web1 "$label_a" "A's SIMBA_CONTENDER_ID"
assert_eq "$owner_a" "$(mutex_field m owner)" "owner while A runs (status vs A's SIMBA_OWNER_ID)"
assert_eq "$token_a" "$(mutex_field m fencing_token)" "token while A runs"
assert_eq web1 "$(mutex_field m label)" "label in status"
[[ ! -e $T/running.B ]] || { cat -- "$log" >&2; fail "B (same label as A) ran while A runs"; }

touch "$T/stop.A"
wait "$a" || fail "A exited with $?"
wait "$b" || fail "B exited with $?"
! grep -q '^OVERLAP' "$log" || { cat -- "$log" >&2; fail "two CMDs ran at once"; }
[[ $(grep -c '^start ' "$log") == 2 ]] || { cat -- "$log" >&2; fail "expected exactly A and B to run"; }
# B started after A ended (line numbers in the log).
end_a=$(grep -n '^end A$' "$log" | cut -d: -f1)
start_b=$(grep -n '^start B ' "$log" | cut -d: -f1)
[[ -n $end_a && -n $start_b ]] && ((end_a < start_b)) ||
  { cat -- "$log" >&2; fail "B started before A ended"; }
read -r _ _ token_b owner_b label_b < <(grep '^start B ' "$log")
assert_eq web1 "$label_b" "B's SIMBA_CONTENDER_ID"
[[ $owner_b == web1#* && $owner_b != "$owner_a" ]] || fail "B's owner id [$owner_b] is not its own (A: $owner_a)"
((token_b > token_a)) || fail "B's token $token_b is not above A's $token_a"

# Length rule: the owner id is the label plus 17 bytes, at most 128.
assert_exit 0 "$SIMBA" run --mutex m --contender-id "$(printf 'x%.0s' {1..111})" -- true
assert_exit 64 "$SIMBA" run --mutex m --contender-id "$(printf 'x%.0s' {1..112})" -- true
[[ $(wc -l <"$T/err") == 1 ]] && grep -q '^simba: error: .*111' "$T/err" ||
  fail "a too-long label: expected one 'simba: error:' line naming 111, got: $(cat -- "$T/err")"
