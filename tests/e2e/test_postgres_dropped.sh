#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# The server ends simba's connection during a hold (pg_terminate_backend,
# again and again): the next guard connects anew and renews, so CMD runs
# to its end under the same lease (exit 0, one fencing token).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
use_test_postgres
needs psql
admin=${SIMBA_TEST_POSTGRES_URI%%\?*}
app="simba_e2e_dropped_$$"
# Only this test's connections are ended (application_name).
export SIMBA_BACKEND="$SIMBA_BACKEND&application_name=$app"

# ttl 3 s: each ended connection costs the next guard a new connection
# and its start-up, which can take hundreds of ms on a busy machine;
# the terminations below span 3 s, one ttl.
"$SIMBA" run --mutex d --ttl 3s --transition 1s -- \
  sh -c 'echo "$SIMBA_FENCING_TOKEN" >"$0"; sleep 5; echo done >>"$0"' "$T/log" &
holder=$!
wait_for 10 test -s "$T/log"
ended=0
for _ in {1..12}; do
  n=$(psql -X -At "$admin" -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                                WHERE application_name = '$app'") || fail "psql failed"
  ended=$((ended + n))
  sleep 0.25
done
rc=0
wait "$holder" || rc=$?
((ended > 0)) || fail "no connection of simba's was ended: the test proves nothing"
assert_eq 0 "$rc" "exit status of the holder whose connections were ended $ended times"
assert_eq done "$(sed -n 2p "$T/log")" "CMD ran to its end"
echo "connections ended during the hold: $ended" >&2
