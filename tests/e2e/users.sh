# shellcheck shell=bash
# Real Unix users for the multi-user tests (source it after common.sh).
#
#   need_users          skip (77) unless root (a failure under CI=true); makes,
#                       once per machine, the group simba-e2e with the users
#                       simba-e2e-a and simba-e2e-b in it, and simba-e2e-c
#                       outside it (system users: no home, no login shell).
#                       Idempotent and safe when tests run in parallel; the
#                       users stay for the next run. Copies the binary under
#                       test to $T/bin/simba (every user can run it) and makes
#                       $T searchable by all.
#   as_user USER CMD... run CMD as USER (its groups, real and effective ids)
#   uid_of USER, gid_of GROUP
#
# SIMBA stays the binary root runs; $SIMBA_ANY is the copy the users run.

E2E_GROUP=simba-e2e
E2E_USER_A=simba-e2e-a # in the group
E2E_USER_B=simba-e2e-b # in the group
E2E_USER_C=simba-e2e-c # not in it

_e2e_make_users() {
  local nologin=/usr/sbin/nologin u
  [[ -x $nologin ]] || nologin=/bin/false
  getent group "$E2E_GROUP" >/dev/null || groupadd --system "$E2E_GROUP" || return 1
  for u in "$E2E_USER_A" "$E2E_USER_B" "$E2E_USER_C"; do
    getent passwd "$u" >/dev/null && continue
    useradd --system --no-create-home --home-dir /nonexistent --shell "$nologin" --user-group "$u" ||
      return 1
  done
  for u in "$E2E_USER_A" "$E2E_USER_B"; do
    id -nG "$u" | tr ' ' '\n' | grep -qx "$E2E_GROUP" || usermod -a -G "$E2E_GROUP" "$u" || return 1
  done
}

need_users() {
  if ((EUID != 0)); then
    [[ ${CI:-} == true ]] && fail "the multi-user tests need root under CI"
    skip "the multi-user tests need root (to make Unix users)"
  fi
  command -v setpriv >/dev/null || skip "setpriv is not installed (package util-linux)"
  command -v useradd >/dev/null || skip "useradd is not installed (package passwd)"
  # Two tests may make the users at once: useradd locks /etc/passwd, but
  # "exists? else add" is two steps.
  (
    flock -w 60 9 || exit 1
    _e2e_make_users
  ) 9>/run/simba-e2e-users.lock || fail "could not make the test users"
  chmod 755 "$T"
  mkdir -p "$T/bin"
  cp -- "$SIMBA" "$T/bin/simba"
  chmod 755 "$T/bin" "$T/bin/simba"
  SIMBA_ANY=$T/bin/simba
}

as_user() {
  local user=$1
  shift
  setpriv --reuid="$user" --regid="$user" --init-groups -- env HOME=/nonexistent "$@"
}

uid_of() { id -u "$1"; }
gid_of() { getent group "$1" | cut -d: -f3; }
