#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# backends: sqlite redis postgres redis-cluster mysql
# simba status shows who holds a mutex (label, host, pid, the command's
# argv[0], the subcommand) and who waits, in queue order; a hand-over shows
# the waiter that got it; simba acquire's lease is "leased"; the table fits
# 80 columns; --format openmetrics is read by a real parser
# (prometheus_client's OpenMetrics parser).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }
needs jq python3
py=$(openmetrics_python)
host=$(hostname)
json_of() { simba_bounded status --mutex "$1" --json; }
field() { json_of "$1" | jq -r "$2"; }

# A holder with a label, its CMD given with arguments (never shown).
"$SIMBA" run --mutex h --contender-id ci-7 --ttl 20s -- \
  sh -c 'touch "$0"; exec sleep 60' "$T/h" secret-argument &
holder=$!
wait_file "$T/h" 10
assert_eq "ci-7 $host $holder sh run" \
  "$(field h '.mutexes[0].holders[0] | "\(.label) \(.host) \(.pid) \(.command) \(.via)"')" \
  "holder of h"
assert_eq "$(field h '.mutexes[0].fencing_token')" "$(field h '.mutexes[0].holders[0].fencing_token')" \
  "the holder's token is the lease's"
assert_exit 0 simba_bounded status
grep -qE "^h +held +ci-7 +run +$host +$holder +sh$" "$T/out" || fail "table row of h: $(cat -- "$T/out")"
grep -q 'secret-argument' "$T/out" && fail "status shows CMD's arguments: $(cat -- "$T/out")"
grep -qE '^  acquired [0-9-]+T[0-9:]+Z \(.* ago\), token [0-9]+$' "$T/out" ||
  fail "no acquired line: $(cat -- "$T/out")"
grep -qE '^  lease ends [0-9-]+T[0-9:]+Z \(in .*\)$' "$T/out" || fail "no lease end: $(cat -- "$T/out")"

# Five waiters, queued one after another: listed in that order. Each
# holds until $T/go-<its name> exists (at most 30 s): w1 is let through
# at once, w2 holds while the queue is read, however slow the machine (a
# sleep was not enough under load).
for i in 1 2 3 4 5; do
  "$SIMBA" run --mutex h --contender-id "w$i" -- sh -c \
    'echo "$0" >>"$1"; i=0; while [ ! -e "$2" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done' \
    "w$i" "$T/order" "$T/go-w$i" &
  eval "w${i}_pid=\$!"
  queued() { [[ $(field h '.mutexes[0].waiters | length') == "$1" ]]; }
  wait_for 10 queued "$i"
done
assert_eq "1:w1 2:w2 3:w3 4:w4 5:w5" \
  "$(field h '[.mutexes[0].waiters[] | "\(.position):\(.label)"] | join(" ")')" "the queue in order"
# shellcheck disable=SC2154 # set by eval above
assert_eq "$w3_pid $host sh" \
  "$(field h '.mutexes[0].waiters[2] | "\(.pid) \(.host) \(.command)"')" "the third waiter"
since_ok=$(field h '[.mutexes[0].waiters[].since] | (. == sort) and (.[0] > 0)')
assert_eq true "$since_ok" "waiting since: set, and in queue order"
assert_exit 0 simba_bounded status
for i in 1 2 3 4 5; do
  grep -qE "^  waiting $i\. w$i on $host, pid [0-9]+, since .*Z \(.* ago\)$" "$T/out" ||
    fail "no line for waiter $i: $(cat -- "$T/out")"
done
awk 'length > 80 { bad = 1 } END { exit bad }' "$T/out" || fail "a line over 80 columns: $(cat -- "$T/out")"

# OpenMetrics, read by prometheus_client's parser.
assert_exit 0 simba_bounded status --format openmetrics
"$py" - "$T/out" <<'EOF' || fail "openmetrics: $(cat -- "$T/out")"
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
values = {}
for family in text_string_to_metric_families(open(sys.argv[1]).read()):
    counter = family.name in ("simba_mutex_acquisitions", "simba_mutex_losses")
    assert family.type == ("counter" if counter else "gauge"), family
    for s in family.samples:
        values[(s.name, s.labels["mutex"])] = s.value
assert values[("simba_mutex_held", "h")] == 1, values
assert values[("simba_mutex_waiters", "h")] == 5, values
assert 0 < values[("simba_mutex_lease_remaining_seconds", "h")] <= 22, values
assert values[("simba_mutex_fencing_token", "h")] > 0, values
assert values[("simba_mutex_acquisitions_total", "h")] == 1, values
assert values[("simba_mutex_losses_total", "h")] == 0, values
EOF

# The holder goes: the queue drains in order, and whoever holds it is
# shown as itself (on Redis the release hands it over in its script).
touch "$T/go-w1"
kill -TERM "$holder"
wait "$holder" || true
is_w() { [[ $(field h '.mutexes[0].holders[0].label // empty') == "$1" ]]; }
wait_for 10 is_w w2
assert_eq "w2 $w2_pid sh" "$(field h '.mutexes[0].holders[0] | "\(.label) \(.pid) \(.command)"')" \
  "holder after the queue moved"
assert_eq "1:w3 2:w4 3:w5" \
  "$(field h '[.mutexes[0].waiters[] | "\(.position):\(.label)"] | join(" ")')" "the queue moved up"
touch "$T"/go-w{2,3,4,5}
for i in 1 2 3 4 5; do wait "$(eval "echo \$w${i}_pid")" || fail "waiter $i failed"; done
assert_eq "w1 w2 w3 w4 w5" "$(tr '\n' ' ' <"$T/order" | sed 's/ $//')" "the order the waiters ran in"
assert_exit 0 simba_bounded status
assert_eq "" "$(grep -v '^MUTEX' "$T/out")" "nothing held: the default listing is empty"
assert_exit 0 simba_bounded status --all
grep -qE '^h +free +- ' "$T/out" || fail "--all shows h free: $(cat -- "$T/out")"

# A label by default: pid@host.
"$SIMBA" run --mutex d -- sh -c 'touch "$0"; exec sleep 60' "$T/d" &
plain=$!
wait_file "$T/d" 10
assert_eq "$plain@$host $plain" "$(field d '.mutexes[0].holders[0] | "\(.label) \(.pid)"')" \
  "a holder without --contender-id"
kill -TERM "$plain"
wait "$plain" || true

# simba acquire's lease between steps: "leased", no command.
assert_exit 0 simba_bounded acquire --mutex l --ttl 30s --contender-id job-9
lease=$(sed -n 's/^SIMBA_LEASE=//p' "$T/out")
[[ -n $lease ]] || fail "acquire printed no SIMBA_LEASE: $(cat -- "$T/out")"
assert_eq "leased job-9 acquire null" \
  "$(field l '"\(.mutexes[0].state) \(.mutexes[0].holders[0] | "\(.label) \(.via) \(.command)")"')" \
  "the lease of simba acquire"
assert_exit 0 simba_bounded release --lease "$lease"

# Usage errors.
assert_exit 64 simba_bounded status --all --mutex h
assert_exit 64 simba_bounded status --format yaml
assert_exit 64 simba_bounded status --json --format table
