# shellcheck shell=bash
# A 3-member etcd cluster of one's own for the tests: Debian's etcd-server
# binary run directly (never the system service), each member on two free
# loopback ports (clients, peers), data in a directory of its own, quick
# elections (heartbeat 50 ms, election timeout 500 ms). Sourced by
# scripts/test and tests/e2e/etcd_common.sh:
#
#   etcd_cluster_start DIR  start the members in DIR/m0..m2 and wait until
#                           the cluster has a leader: sets ETCD_PIDS,
#                           ETCD_CLIENT_PORTS, ETCD_URI
#                           (etcd://127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2);
#                           false when it cannot
#   etcd_member_spawn I     start member I again (after a kill of ETCD_PIDS[I])
#   etcd_cluster_stop       SIGTERM, then SIGKILL
#   etcd_warns_version      true when `simba doctor` warns of the etcd
#                           binary's version (stale-leader-revoke: before
#                           3.4.31 and 3.5.13), so that a doctor with no
#                           other warning exits 1
#   ETCD_PEER_HOOK          a function etcd_cluster_start calls with the
#                           peer ports chosen, before it starts a member:
#                           it may set ETCD_PEER_URL_PORTS, the ports the
#                           members advertise (proxies in front of the
#                           peer ports: tests/e2e/etcd_peer_links.py);
#                           false: other ports
#   etcd_single_start DIR [ARGS...]  one member of its own (the same
#                           settings, ARGS added), for tests that change
#                           the cluster (auth, TLS): the same variables
#
# The processes are background jobs of the caller.

# shellcheck source=ports.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/ports.sh"
ETCD_DIR='' ETCD_URI='' ETCD_PIDS=() ETCD_CLIENT_PORTS=() ETCD_PEER_PORTS=() ETCD_PEER_URL_PORTS=()

# _etcd_alive PID: running (kill -0 also finds a zombie not reaped yet)
_etcd_alive() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}

etcd_warns_version() {
  local major minor patch
  IFS=. read -r major minor patch <<<"$(etcd --version | sed -n 's/^etcd Version: *//p')"
  ((major == 3 && (minor < 4 || (minor == 4 && patch < 31) || (minor == 5 && patch < 13))))
}

_etcd_port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# _etcd_healthy PORT: the member answers /health with true (it has a leader)
_etcd_healthy() {
  local reply=''
  reply=$(
    { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || exit 1
    printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
    timeout 1 cat <&3
  ) 2>/dev/null || return 1
  [[ $reply == *'"health":"true"'* ]]
}

_etcd_peer_url_port() { printf '%s' "${ETCD_PEER_URL_PORTS[$1]:-${ETCD_PEER_PORTS[$1]}}"; }

_etcd_cluster_list() {
  local i list=''
  for i in 0 1 2; do list+="${list:+,}m$i=http://127.0.0.1:$(_etcd_peer_url_port "$i")"; done
  printf '%s' "$list"
}

etcd_member_spawn() {
  local i=$1 state=${2:-existing}
  etcd --name "m$i" --data-dir "$ETCD_DIR/m$i" \
    --listen-client-urls "http://127.0.0.1:${ETCD_CLIENT_PORTS[i]}" \
    --advertise-client-urls "http://127.0.0.1:${ETCD_CLIENT_PORTS[i]}" \
    --listen-peer-urls "http://127.0.0.1:${ETCD_PEER_PORTS[i]}" \
    --initial-advertise-peer-urls "http://127.0.0.1:$(_etcd_peer_url_port "$i")" \
    --initial-cluster "$(_etcd_cluster_list)" --initial-cluster-state "$state" \
    --initial-cluster-token "simba-test-$$" \
    --heartbeat-interval 50 --election-timeout 500 --logger zap --log-level error \
    </dev/null >>"$ETCD_DIR/m$i.log" 2>&1 &
  ETCD_PIDS[i]=$!
}

etcd_single_start() {
  local dir=$1 attempt i
  shift
  ETCD_DIR=$dir
  mkdir -p -- "$dir" || return 1
  for ((attempt = 0; attempt < 5; attempt++)); do # a port taken meanwhile: others
    ETCD_CLIENT_PORTS=("$(random_server_port)") ETCD_PEER_PORTS=("$(random_server_port)")
    _etcd_port_taken "${ETCD_CLIENT_PORTS[0]}" || _etcd_port_taken "${ETCD_PEER_PORTS[0]}" && continue
    rm -rf -- "$dir/s"
    etcd --name s --data-dir "$dir/s" \
      --listen-client-urls "${ETCD_LISTEN:-http}://127.0.0.1:${ETCD_CLIENT_PORTS[0]}" \
      --advertise-client-urls "${ETCD_LISTEN:-http}://127.0.0.1:${ETCD_CLIENT_PORTS[0]}" \
      --listen-peer-urls "http://127.0.0.1:${ETCD_PEER_PORTS[0]}" \
      --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER_PORTS[0]}" \
      --initial-cluster "s=http://127.0.0.1:${ETCD_PEER_PORTS[0]}" \
      --heartbeat-interval 50 --election-timeout 500 --logger zap --log-level error "$@" \
      </dev/null >>"$dir/s.log" 2>&1 &
    ETCD_PIDS=($!)
    ETCD_URI="etcd://127.0.0.1:${ETCD_CLIENT_PORTS[0]}"
    for ((i = 0; i < 200; i++)); do
      [[ -n ${ETCD_LISTEN:-} ]] && _etcd_port_taken "${ETCD_CLIENT_PORTS[0]}" && return 0
      _etcd_healthy "${ETCD_CLIENT_PORTS[0]}" && return 0
      kill -0 "${ETCD_PIDS[0]}" 2>/dev/null || break
      sleep 0.05
    done
    etcd_cluster_stop
  done
  return 1
}

etcd_cluster_start() {
  local attempt i p ports
  command -v etcd >/dev/null 2>&1 || return 1
  ETCD_DIR=$1
  mkdir -p -- "$ETCD_DIR" || return 1
  for ((attempt = 0; attempt < 5; attempt++)); do
    ports=()
    while ((${#ports[@]} < 6)); do
      p=$(random_server_port)
      _etcd_port_taken "$p" || [[ " ${ports[*]} " == *" $p "* ]] || ports+=("$p")
    done
    ETCD_CLIENT_PORTS=("${ports[@]:0:3}") ETCD_PEER_PORTS=("${ports[@]:3:3}")
    rm -rf -- "$ETCD_DIR"/m[0-2]
    if [[ -n ${ETCD_PEER_HOOK:-} ]]; then "$ETCD_PEER_HOOK" "${ETCD_PEER_PORTS[@]}" || continue; fi
    for i in 0 1 2; do etcd_member_spawn "$i" new; done
    for ((i = 0; i < 200; i++)); do
      # Every member: one that could not bind its port (taken meanwhile)
      # leaves a cluster of two that m0 finds healthy.
      if _etcd_healthy "${ETCD_CLIENT_PORTS[0]}" && _etcd_healthy "${ETCD_CLIENT_PORTS[1]}" &&
        _etcd_healthy "${ETCD_CLIENT_PORTS[2]}"; then
        ETCD_URI="etcd://127.0.0.1:${ETCD_CLIENT_PORTS[0]},127.0.0.1:${ETCD_CLIENT_PORTS[1]},127.0.0.1:${ETCD_CLIENT_PORTS[2]}"
        return 0
      fi
      for p in "${ETCD_PIDS[@]}"; do _etcd_alive "$p" || break 2; done
      sleep 0.05
    done
    etcd_cluster_stop
  done
  return 1
}

etcd_cluster_stop() {
  local p
  for p in "${ETCD_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${ETCD_PIDS[@]}"; do
    for _ in {1..40}; do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  ETCD_PIDS=()
}
