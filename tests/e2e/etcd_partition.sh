# shellcheck shell=bash
# A 3-member etcd cluster of the test's own whose peer traffic goes through
# fault proxies (etcd_peer_links.py), for the partition tests
# (test_etcd_partition_*.sh). Sourced after common.sh:
#
#   partition_cluster_start  the cluster (etcd_server.sh) with the proxies;
#                            sets LEADER (the member that leads), CUT (the
#                            member to cut off: the leader; a follower
#                            with SIMBA_E2E_CUT=follower) and OTHERS (the
#                            two others' client endpoints)
#   partition_cut I          cut member I off from its peers (its clients
#                            still reach it); prints the time (ms) to stderr
#                            and sets CUT_MS
#   HOLD_CMD                 a CMD for sh -c "$HOLD_CMD" FILE SECONDS: its
#                            start (ms) in FILE.start, its pid (it execs a
#                            sleep) in FILE.pid, the token in FILE.token
needs etcd etcdctl python3
source "$(dirname -- "${BASH_SOURCE[0]}")/etcd_server.sh"

_partition_links() {
  local peers=$T/peers
  [[ -n ${_partition_pid:-} ]] && kill "$_partition_pid" 2>/dev/null
  rm -rf -- "$peers" && mkdir -p -- "$peers" || return 1
  python3 "$(dirname -- "${BASH_SOURCE[0]}")/etcd_peer_links.py" "$peers" "$ETCD_DIR" "$@" \
    2>"$peers/log" &
  _partition_pid=$!
  wait_line "$peers/ports" 10 || return 1
  # shellcheck disable=SC2034 # read by etcd_server.sh
  read -r -a ETCD_PEER_URL_PORTS <"$peers/ports"
  # A proxy's port (any free one) may be one chosen for a member, not
  # bound yet: other ports then.
  local p
  for p in "${ETCD_PEER_URL_PORTS[@]}"; do
    [[ " ${ETCD_CLIENT_PORTS[*]} ${ETCD_PEER_PORTS[*]} " != *" $p "* ]] || return 1
  done
}

# The member that leads, by every member's view (all three answer and agree).
_partition_leader() {
  local i seen lead leader_id='' ids=()
  for i in 0 1 2; do
    seen=$(timeout -k 2 5 env ETCDCTL_API=3 etcdctl --command-timeout=1s \
      --endpoints="127.0.0.1:${ETCD_CLIENT_PORTS[i]}" endpoint status -w json 2>/dev/null) || return 1
    ids[i]=$(grep -o '"member_id":[0-9]*' <<<"$seen" | cut -d: -f2) || return 1
    lead=$(grep -o '"leader":[0-9]*' <<<"$seen" | cut -d: -f2) || return 1
    [[ -z $leader_id || $lead == "$leader_id" ]] || return 1
    leader_id=$lead
  done
  for i in 0 1 2; do [[ ${ids[i]} == "$leader_id" ]] && printf '%s\n' "$i" && return 0; done
  return 1
}

partition_cluster_start() {
  local i
  ETCD_PEER_HOOK=_partition_links etcd_cluster_start "$T/etcd" ||
    fail "cannot start an etcd cluster: $(tail -n 5 "$T"/etcd/m0.log; cat "$T/peers/log")"
  LEADER=''
  local deadline=$(($(now_ms) + 15000))
  until LEADER=$(_partition_leader); do
    (($(now_ms) < deadline)) || fail "the members agree on no leader: $(tail -n 3 "$T"/etcd/m?.log; cat "$T/peers/log")"
    sleep 0.1
  done
  CUT=$LEADER
  [[ ${SIMBA_E2E_CUT:-leader} == follower ]] && CUT=$(((LEADER + 1) % 3))
  OTHERS=''
  for i in 0 1 2; do ((i == CUT)) || OTHERS+="${OTHERS:+,}127.0.0.1:${ETCD_CLIENT_PORTS[i]}"; done
}

partition_cut() {
  echo "$1" >"$T/peers/cut.tmp" && mv -- "$T/peers/cut.tmp" "$T/peers/cut"
  CUT_MS=$(now_ms)
  sleep 0.05 # polled every 20 ms
  echo "cut member $1 (the leader: $LEADER) off its peers at $CUT_MS" >&2
}

# shellcheck disable=SC2016,SC2034 # for sh -c, in the tests
HOLD_CMD='date +%s%3N >"$0.start"; echo "$SIMBA_FENCING_TOKEN" >"$0.token"; echo $$ >"$0.pid"; exec sleep "$1"'
