#!/usr/bin/env bash
# ctest's conformance/etcd: the backend conformance suite against the etcd
# cluster named by SIMBA_TEST_ETCD_URI (scripts/test starts one), under a
# key prefix of its own so that runs never see each other's keys.
#
#   bash tests/backend/conformance_etcd.sh build/simba_conformance [doctest args]
#
# Exit 77 (skipped) when the variable is unset. The cases of what the etcd
# backend does not have yet (--slots, --once-per, history and its counters:
# docs/backends/etcd.md) are left out by name.
set -euo pipefail
bin=$1
shift
if [[ -z ${SIMBA_TEST_ETCD_URI:-} ]]; then
  echo "etcd tests skipped: SIMBA_TEST_ETCD_URI is not set (scripts/test starts a cluster and sets it)" >&2
  exit 77
fi
export SIMBA_TEST_BACKEND="$SIMBA_TEST_ETCD_URI/conf-$(date +%s)-$$"
echo "conformance against $SIMBA_TEST_BACKEND" >&2
exec "$bin" --test-case-exclude='*slots*,*acquire_once*,*guard_mark*,*release_once*,lost:*,counters*,skipped:*,once-per*' "$@"
