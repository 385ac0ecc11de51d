#!/usr/bin/env bash
# ctest's conformance/redis: the backend conformance suite (and the
# Redis-specific cases) against the Redis named by SIMBA_TEST_REDIS_URI, with
# a key prefix of its own so that runs never see each other's keys.
#
#   bash tests/backend/conformance_redis.sh build/simba_conformance [doctest args]
#
# Exit 77 (skipped) when SIMBA_TEST_REDIS_URI is unset; scripts/test always
# sets it.
#
#   bash tests/backend/conformance_redis.sh --cluster build/simba_conformance
#
# runs it against the Redis Cluster of SIMBA_TEST_REDIS_CLUSTER_URI instead.
set -euo pipefail
var=SIMBA_TEST_REDIS_URI
if [[ ${1:-} == --cluster ]]; then
  var=SIMBA_TEST_REDIS_CLUSTER_URI
  shift
fi
bin=$1
shift
if [[ -z ${!var:-} ]]; then
  echo "redis tests skipped: $var is not set (scripts/test starts a redis-server and a Redis Cluster and sets it)" >&2
  exit 77
fi
uri=${!var}
prefix="simba-conf-$(date +%s)-$$:"
if [[ $uri == *\?* ]]; then uri+="&prefix=$prefix"; else uri+="?prefix=$prefix"; fi
export SIMBA_TEST_BACKEND=$uri
# A fresh database quarantines its first lease (docs/safety.md):
# wait that out here, once, with a short lease (a no-op when warm).
simba=$(dirname -- "$bin")/simba
if [[ -x $simba && $var == SIMBA_TEST_REDIS_CLUSTER_URI ]]; then
  # shellcheck source=../e2e/cluster_common.sh
  source "$(dirname -- "${BASH_SOURCE[0]}")/../e2e/cluster_common.sh"
  nodes=${uri#*://}
  mapfile -t CLUSTER_PORTS < <(tr ',' '\n' <<<"${nodes%%[/?]*}" | sed 's/^.*://')
  cluster_warm_up "$simba" "$uri"
elif [[ -x $simba ]]; then
  "$simba" run --backend "$uri" --mutex warm-up --ttl 2s --transition 1s -- true
fi
echo "conformance against ${SIMBA_TEST_BACKEND//\/\/*@///***@}" >&2
exec "$bin" "$@"
