#!/usr/bin/env bash
# simba doctor on Redis (issue 32 §2), the checks every backend shares:
# nothing listening is one line, a connection fail, exit 69 (also in
# JSON); on a warmed-up server the connection, clock and quarantine are
# ok; on a server just restarted, where the first acquire started a
# quarantine, the quarantine warns and says until when, and exit is not 0.
# The server's own checks (persistence, eviction, ACL...) are
# Backend::diagnose's, tested apart (tests/backend/redis_doctor.cpp); one of
# them here, through the command: a policy that refuses every run.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/redis_common.sh"
needs jq
use_test_redis
start_own_redis

bounded() { timeout -k 5 30 "$@"; }
shared_verdict() { jq -r --arg c "$1" '.findings[] | select(.check == $c) | .verdict' "$T/out"; }

# Nothing listening.
port=$OWN_REDIS_PORT
closed=$((port == 65535 ? port - 1 : port + 1))
for ((i = 0; i < 50; i++)); do redis_ping "$closed" || break; closed=$((closed - 2)); done
redis_ping "$closed" && skip "found no closed port near $port"
assert_exit 69 bounded "$SIMBA" doctor --backend "redis://127.0.0.1:$closed/0?timeout=500ms"
assert_eq 1 "$(wc -l <"$T/out")" "lines for a closed port ($(cat "$T/out"))"
grep -q "^fail  connection  cannot connect to Redis at 127.0.0.1:$closed: Connection refused — fix: check the address" "$T/out" ||
  fail "closed port: $(cat "$T/out")"
[[ ! -s $T/err ]] || fail "doctor wrote on stderr: $(cat "$T/err")"
assert_exit 69 bounded "$SIMBA" doctor --json --backend "redis://127.0.0.1:$closed/0?timeout=500ms"
assert_eq fail "$(jq -r .verdict "$T/out")" "JSON verdict, closed port"
assert_eq fail "$(shared_verdict connection)" "JSON connection, closed port"
assert_eq "redis://127.0.0.1:$closed/0?timeout=500ms" "$(jq -r .backend "$T/out")" "JSON backend"

# The test server, warmed up (use_test_redis): the shared checks are ok.
rc=0
bounded "$SIMBA" doctor --json >"$T/out" 2>"$T/err" || rc=$?
((rc == 0 || rc == 1 || rc == 69)) || fail "doctor exited $rc: $(cat "$T/out" "$T/err")"
for check in connection clock quarantine; do
  assert_eq ok "$(shared_verdict "$check")" "$check on the test server ($(cat "$T/out"))"
done

# A fresh server: the first acquire starts a quarantine of ttl +
# transition + 1 s (it may have lost a lease), and --no-wait says so.
export SIMBA_BACKEND=$OWN_REDIS_URI
assert_exit 69 "$SIMBA" run --mutex first --ttl 20s --transition 2s --no-wait -- true
rc=0
bounded "$SIMBA" doctor >"$T/out" 2>"$T/err" || rc=$?
((rc == 1 || rc == 69)) || fail "doctor exited $rc in a quarantine: $(cat "$T/out" "$T/err")"
line=$(grep '^warn  quarantine ' "$T/out") || fail "no quarantine warning: $(cat "$T/out")"
[[ $line =~ in\ force\ until\ about\ ([0-9T:-]+Z)\ \(in\ ([0-9]+s)\).*\ —\ fix:\  ]] ||
  fail "the quarantine's end: $line"
until_s=$(date -u -d "${BASH_REMATCH[1]}" +%s)
((until_s >= $(date -u +%s) + 15 && until_s <= $(date -u +%s) + 24)) ||
  fail "the quarantine ends at ${BASH_REMATCH[1]}, not in 15-24 s: $line"
bounded "$SIMBA" doctor --json >"$T/out" 2>"$T/err" || true
assert_eq warn "$(shared_verdict quarantine)" "JSON quarantine"
jq -r '.findings[] | select(.check == "quarantine") | .detail' "$T/out" | grep -q "until about" ||
  fail "JSON quarantine detail: $(cat "$T/out")"

# A server whose eviction policy simba refuses: every run fails at its
# first call, and doctor still gets to the server's own checks, which name
# the setting and its fix (exit 69).
redis_cmd CONFIG SET maxmemory 100mb >/dev/null
redis_cmd CONFIG SET maxmemory-policy allkeys-lru >/dev/null
assert_exit 69 bounded "$SIMBA" doctor --json
assert_eq ok "$(shared_verdict connection)" "connection to an allkeys-lru server ($(cat "$T/out"))"
assert_eq fail "$(shared_verdict maxmemory-policy)" "maxmemory-policy allkeys-lru ($(cat "$T/out"))"
jq -r '.findings[] | select(.check == "maxmemory-policy") | .fix' "$T/out" | grep -q noeviction ||
  fail "the eviction fix: $(cat "$T/out")"
