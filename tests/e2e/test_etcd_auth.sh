#!/usr/bin/env bash
# backends: sqlite
# etcd's token authentication (docs/backends/etcd.md): on a member of the
# test's own with auth enabled, a user with readwrite on simba's prefix
# runs (its password from SIMBA_ETCD_PASSWORD); a wrong password, a user
# without rights on the prefix, and no user at all each end with 69 at
# once, each line saying what to grant or give, the password never
# printed; a password in the URI is refused (64). doctor fails a user that
# may read the prefix but not write it.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs etcd etcdctl
source "$(dirname -- "${BASH_SOURCE[0]}")/etcd_server.sh"
etcd_single_start "$T/etcd" || fail "cannot start an etcd member: $(tail -n 5 "$T/etcd/s.log")"
ctl() { ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:${ETCD_CLIENT_PORTS[0]}" "$@" >/dev/null; }
ctl user add root:root-pw-e2e
ctl user add simba:simba-pw-e2e
ctl user add other:other-pw-e2e
ctl role add simba
ctl role grant-permission simba --prefix=true readwrite simba/
ctl user grant-role simba simba
ctl user grant-role root root
ctl auth enable

bounded() { timeout -k 5 20 "$@"; }
export SIMBA_ETCD_PASSWORD=simba-pw-e2e
assert_exit 0 bounded "$SIMBA" run --backend "$ETCD_URI?user=simba" --mutex m -- sh -c 'echo "$SIMBA_FENCING_TOKEN"'
[[ $(<"$T/out") -gt 0 ]] || fail "no fencing token: $(<"$T/out")"

SIMBA_ETCD_PASSWORD=wrong-pw-e2e assert_exit 69 bounded "$SIMBA" run --backend "$ETCD_URI?user=simba" --mutex m -- true
grep -q "simba: error: .*user simba" "$T/err" || fail "no word of the login: $(<"$T/err")"
grep -q "(its password comes from SIMBA_ETCD_PASSWORD)" "$T/err" || fail "no word of where the password comes from: $(<"$T/err")"
! grep -q "wrong-pw-e2e" "$T/err" "$T/out" || fail "the password was printed"

SIMBA_ETCD_PASSWORD=other-pw-e2e assert_exit 69 bounded "$SIMBA" run --backend "$ETCD_URI?user=other" --mutex m -- true
grep -qi "permission denied" "$T/err" || fail "no word of the permission: $(<"$T/err")"
# ... and what to grant
grep -qF "permission denied: user other needs readwrite on the prefix simba/ (etcdctl --user root role grant-permission ROLE --prefix=true readwrite simba/, a role of other)" "$T/err" ||
  fail "not what to grant: $(<"$T/err")"
! grep -q "other-pw-e2e" "$T/err" "$T/out" || fail "the password was printed"

assert_exit 69 bounded "$SIMBA" run --backend "$ETCD_URI" --mutex m -- true
grep -qF "the cluster has authentication on: give ?user=NAME in the URI and its password in SIMBA_ETCD_PASSWORD" "$T/err" ||
  fail "no user: not what to give: $(<"$T/err")"
assert_exit 64 "$SIMBA" run --backend "etcd://simba:simba-pw-e2e@127.0.0.1:${ETCD_CLIENT_PORTS[0]}" --mutex m -- true
! grep -q "simba-pw-e2e" "$T/err" || fail "the password in the URI was printed: $(<"$T/err")"
SIMBA_ETCD_PASSWORD='' assert_exit 64 "$SIMBA" run --backend "$ETCD_URI?user=simba" --mutex m -- true
grep -q "SIMBA_ETCD_PASSWORD" "$T/err" || fail "no word of SIMBA_ETCD_PASSWORD: $(<"$T/err")"

# status as the user, through the same login
assert_exit 0 bounded "$SIMBA" status --backend "$ETCD_URI?user=simba" --all

# simba doctor: the members, their leader, and the user's rights on the
# prefix; a warning (exit 1) that the password and the token cross the
# network in clear over etcd://
assert_exit 1 bounded "$SIMBA" doctor --backend "$ETCD_URI?user=simba"
grep -q '^ok *leader' "$T/out" || fail "doctor: no leader check: $(<"$T/out")"
grep -q '^warn *tls .*user simba.*unencrypted' "$T/out" || fail "doctor: no word of the clear password: $(<"$T/out")"
! grep -q "simba-pw-e2e" "$T/out" "$T/err" || fail "doctor printed the password"
grep -q '^ok *rights' "$T/out" || fail "doctor: the user's rights: $(<"$T/out")"
SIMBA_ETCD_PASSWORD=other-pw-e2e assert_exit 69 bounded "$SIMBA" doctor --backend "$ETCD_URI?user=other"
grep -q '^fail *rights.*permission denied' "$T/out" || fail "doctor: no refusal of rights: $(<"$T/out")"
# A user that may read the prefix but not write it: doctor fails it, as run
# would (and writes nothing).
ctl --user root:root-pw-e2e role add reader
ctl --user root:root-pw-e2e role grant-permission reader --prefix=true read simba/
ctl --user root:root-pw-e2e user add reader:reader-pw-e2e
ctl --user root:root-pw-e2e user grant-role reader reader
SIMBA_ETCD_PASSWORD=reader-pw-e2e assert_exit 69 bounded "$SIMBA" doctor --backend "$ETCD_URI?user=reader"
grep -q '^fail *rights *cannot read and write simba/: .*permission denied.* — fix: give a role of the user readwrite on simba/' "$T/out" ||
  fail "doctor: a read-only user: $(<"$T/out")"
[[ -z $(ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:${ETCD_CLIENT_PORTS[0]}" --user root:root-pw-e2e get --prefix 'simba/!doctor') ]] ||
  fail "doctor wrote its probe key"
! grep -q "other-pw-e2e" "$T/out" "$T/err" || fail "doctor printed the password"
