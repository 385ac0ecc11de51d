# shellcheck shell=bash
# A Redis Cluster of three masters on loopback (docs/backends/redis.md "Redis Cluster"):
# Debian's redis-server in cluster mode, without persistence, joined by
# `redis-cli --cluster create --cluster-yes`. Sourced by scripts/test (the
# cluster of conformance/redis-cluster and the e2e-redis-cluster tests) and
# by tests that reshard a cluster of their own. Needs nothing of common.sh.
#
#   cluster_start DIR      three masters on free loopback ports (and their
#                          bus ports, +10000) under DIR, as background jobs;
#                          true once every node says cluster_state:ok and
#                          knows the same slot map (at most ~40 s). Sets
#                          CLUSTER_PORTS, CLUSTER_PIDS and CLUSTER_URI
#                          (redis+cluster://127.0.0.1:P1,...).
#   cluster_stop           stops them (SIGTERM, then SIGKILL)
#   ccli PORT ARGS...      redis-cli on 127.0.0.1:PORT, 5 s at most
#   cluster_name_on PORT PREFIX
#                          prints a mutex name PREFIX-N whose slot the master
#                          on PORT serves
#   cluster_owner NAME     the port of the master that serves mutex NAME
#   cluster_warm_up SIMBA URI
#                          one short lease on each master at once: a fresh
#                          master quarantines its first (docs/safety.md, "Safety
#                          model")

ccli() {
  local port=$1
  shift
  timeout 5 redis-cli -h 127.0.0.1 -p "$port" "$@" 2>/dev/null
}

# A port free with its bus port (+10000).
_cluster_free_port() {
  local p
  for _ in {1..100}; do
    p=$(random_server_port 10000)
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
    (exec 3<>"/dev/tcp/127.0.0.1/$((p + 10000))") 2>/dev/null && continue
    printf '%s\n' "$p"
    return 0
  done
  return 1
}

_cluster_spawn() {
  local dir=$1 p pid i
  for _ in {1..10}; do
    p=$(_cluster_free_port) || return 1
    mkdir -p -- "$dir/$p"
    redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
      --cluster-config-file "$dir/$p/nodes.conf" --cluster-node-timeout 2000 \
      --save '' --appendonly no --daemonize no --dir "$dir/$p" \
      --logfile "$dir/$p/redis.log" </dev/null >/dev/null 2>&1 &
    pid=$!
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      if [[ $(ccli "$p" PING) == PONG ]]; then
        CLUSTER_PORTS+=("$p")
        CLUSTER_PIDS+=("$pid")
        return 0
      fi
      sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null || true
  done
  return 1
}

# Every node ok, and all answering the same CLUSTER SLOTS.
_cluster_ready() {
  local p first='' slots
  for p in "${CLUSTER_PORTS[@]}"; do
    ccli "$p" CLUSTER INFO | grep -q '^cluster_state:ok' || return 1
    slots=$(ccli "$p" CLUSTER SLOTS | sort | tr '\n' ' ')
    [[ -z $first ]] && first=$slots
    [[ $slots == "$first" ]] || return 1
  done
}

cluster_start() {
  local dir=$1 p args=()
  CLUSTER_PORTS=() CLUSTER_PIDS=()
  mkdir -p -- "$dir"
  for _ in 1 2 3; do _cluster_spawn "$dir" || return 1; done
  for p in "${CLUSTER_PORTS[@]}"; do args+=("127.0.0.1:$p"); done
  timeout 30 redis-cli --cluster create "${args[@]}" --cluster-yes >"$dir/create.log" 2>&1 ||
    return 1
  for _ in {1..400}; do
    if _cluster_ready; then
      CLUSTER_URI="redis+cluster://$(printf '127.0.0.1:%s,' "${CLUSTER_PORTS[@]}")"
      CLUSTER_URI=${CLUSTER_URI%,}
      return 0
    fi
    sleep 0.1
  done
  return 1
}

cluster_stop() {
  local pid
  for pid in "${CLUSTER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${CLUSTER_PIDS[@]}"; do
    for _ in {1..40}; do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  CLUSTER_PIDS=()
}

# A key "{NAME}" has the slot of mutex NAME (its keys are "<prefix>{NAME}...").
cluster_name_on() {
  local port=$1 prefix=$2 n
  for ((n = 0; n < 1000; n++)); do
    [[ $(ccli "$port" EXISTS "{$prefix-$n}") =~ ^[0-9]+$ ]] && {
      printf '%s\n' "$prefix-$n"
      return 0
    }
  done
  return 1
}

cluster_owner() {
  local p
  for p in "${CLUSTER_PORTS[@]}"; do
    [[ $(ccli "$p" EXISTS "{$1}") =~ ^[0-9]+$ ]] && { printf '%s\n' "$p"; return 0; }
  done
  return 1
}

cluster_warm_up() {
  local simba=$1 uri=$2 p name pids=() rc=0
  for p in "${CLUSTER_PORTS[@]}"; do
    name=$(cluster_name_on "$p" simba-warm-up) || return 1
    "$simba" run --backend "$uri" --mutex "$name" --ttl 2s --transition 1s -- true &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return "$rc"
}
