#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the CMD script
# backends: sqlite redis postgres etcd mysql
# Two `simba schedule --contender-id job` (one label, issue 12 §1): one
# leader runs every tick, the other runs nothing; runs never overlap.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

log=$T/log
# CMD: holds an exclusive flock while it runs (OVERLAP when another run
# holds it) and records "run SIMBA_PID TOKEN OWNER".
cat >"$T/cmd.sh" <<'EOF'
log=$1 dir=$2
exec 9>>"$dir/excl"
flock -n 9 || echo "OVERLAP $$" >>"$log"
read -r _ _ _ simba _ <"/proc/$PPID/stat" # the parent is simba's watchdog
echo "run $simba $SIMBA_FENCING_TOKEN $SIMBA_OWNER_ID" >>"$log"
sleep 0.15
EOF

for i in 1 2; do
  "$SIMBA" schedule --mutex m --contender-id job --every 300ms --ttl 3s --transition 2s -- \
    sh "$T/cmd.sh" "$log" "$T" 2>"$T/err.$i" &
done
runs() {
  local n
  n=$(grep -c '^run ' "$log" 2>/dev/null) || true
  printf '%s\n' "${n:-0}"
}
runs_at_least() { (($(runs) >= $1)); }
wait_for 15 runs_at_least 8

! grep -q '^OVERLAP' "$log" || { cat -- "$log" >&2; fail "two runs at once"; }
leaders=$(awk '/^run /{print $2}' "$log" | sort -u | wc -l)
owners=$(awk '/^run /{print $4}' "$log" | sort -u)
assert_eq 1 "$leaders" "simba processes that ran CMD (one leader)"
[[ $owners == job#* ]] || fail "the runs' SIMBA_OWNER_ID [$owners] is not job#..."
