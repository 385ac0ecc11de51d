#!/usr/bin/env bash
# backends: sqlite
# simba doctor's etcd checks of etcd's own hazards (src/backend/etcd/
# README.md): a member older than 3.4.31 / 3.5.13 warns that a stalled old
# leader can revoke a live lease (etcd-io/etcd#15247); leases over 300 s
# (--ttl + --transition + 1 s) warn that lease checkpoints can end them
# early on a new leader, up to 300 s are said safe. On a member of the
# test's own; a warning alone makes doctor exit 1.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs etcd
source "$(dirname -- "${BASH_SOURCE[0]}")/etcd_server.sh"
etcd_single_start "$T/etcd" || fail "cannot start an etcd member: $(tail -n 5 "$T/etcd/s.log")"
version=$(etcd --version | sed -n 's/^etcd Version: *//p')
old=0
etcd_warns_version && old=1

doctor() {
  local rc=0
  timeout -k 5 30 "$SIMBA" doctor --backend "$ETCD_URI" "$@" >"$T/d" 2>&1 || rc=$?
  echo "$rc"
}
rc=$(doctor)
if ((old)); then
  grep -q "^warn  *stale-leader-revoke  *etcd $version: .*#15247" "$T/d" || fail "no warning for etcd $version: $(<"$T/d")"
  assert_eq 1 "$rc" "doctor's exit with that warning"
else
  ! grep -q "stale-leader-revoke" "$T/d" || fail "a warning for etcd $version: $(<"$T/d")"
fi
grep -q "^ok  *lease-checkpoints  *leases of 13 s: never checkpointed" "$T/d" || fail "the default lease: $(<"$T/d")"

doctor --ttl 297s --transition 2s >/dev/null
grep -q "^ok  *lease-checkpoints  *leases of 300 s: never checkpointed" "$T/d" || fail "a 300 s lease: $(<"$T/d")"
rc=$(doctor --ttl 298s --transition 2s)
grep -q "^warn  *lease-checkpoints  *leases of 301 s: .*fix: keep ttl + transition at most 299s" "$T/d" || fail "a 301 s lease: $(<"$T/d")"
assert_eq 1 "$rc" "doctor's exit with a lease over 300 s"
