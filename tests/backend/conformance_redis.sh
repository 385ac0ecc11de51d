#!/usr/bin/env bash
# ctest's conformance/redis: the backend conformance suite (and the
# Redis-specific cases) against the Redis named by SIMBA_TEST_REDIS_URI, with
# a key prefix of its own so that runs never see each other's keys.
#
#   bash tests/backend/conformance_redis.sh build/simba_conformance [doctest args]
#
# Exit 77 (skipped) when SIMBA_TEST_REDIS_URI is unset; scripts/test always
# sets it.
set -euo pipefail
bin=$1
shift
if [[ -z ${SIMBA_TEST_REDIS_URI:-} ]]; then
  echo "redis tests skipped: SIMBA_TEST_REDIS_URI is not set (scripts/test starts a redis-server and sets it)" >&2
  exit 77
fi
uri=$SIMBA_TEST_REDIS_URI
prefix="simba-conf-$(date +%s)-$$:"
if [[ $uri == *\?* ]]; then uri+="&prefix=$prefix"; else uri+="?prefix=$prefix"; fi
export SIMBA_TEST_BACKEND=$uri
# A fresh database quarantines its first lease (README "Safety model"):
# wait that out here, once, with a short lease (a no-op when warm).
simba=$(dirname -- "$bin")/simba
if [[ -x $simba ]]; then
  "$simba" run --backend "$uri" --mutex warm-up --ttl 2s --transition 1s -- true
fi
echo "conformance against ${SIMBA_TEST_BACKEND//\/\/*@///***@}" >&2
exec "$bin" "$@"
