# shellcheck shell=bash
# Real Unix users for the multi-user tests (source it after common.sh).
#
#   need_users          needs root, setpriv and useradd (common.sh: a skip,
#                       a failure under CI=true); makes,
#                       once per machine, the group simba-e2e with the users
#                       simba-e2e-a and simba-e2e-b in it, and simba-e2e-c
#                       outside it (system users: no home, no login shell).
#                       Idempotent and safe when tests run in parallel; the
#                       users stay for the next run. Copies the binary under
#                       test to $T/bin/simba and makes $T searchable by all:
#                       the users cannot reach the build tree (a checkout
#                       under /root, mode 0700, on Debian), so whatever
#                       they run must come from $T (copy_for_users FILE).
#   copy_for_users FILE prints the path of a copy of FILE in $T/bin that
#                       every user can run
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
  needs_root "the multi-user tests make Unix users"
  needs setpriv useradd
  # Two tests may make the users at once: useradd locks /etc/passwd, but
  # "exists? else add" is two steps.
  (
    flock -w 60 9 || exit 1
    _e2e_make_users
  ) 9>/run/simba-e2e-users.lock || fail "could not make the test users"
  chmod 755 "$T"
  _e2e_reachable_by_all "$T" ||
    skip "the users cannot reach the test's directory $T (a parent is not searchable by all): set TMPDIR to one they can"
  mkdir -p "$T/bin"
  chmod 755 "$T/bin"
  SIMBA_ANY=$(copy_for_users "$SIMBA")
}

copy_for_users() {
  local copy
  copy=$T/bin/$(basename -- "$1")
  cp -- "$1" "$copy"
  chmod 755 -- "$copy"
  printf '%s\n' "$copy"
}

# _e2e_reachable_by_all DIR: every directory from / to DIR lets others in.
_e2e_reachable_by_all() {
  local d
  d=$(readlink -f -- "$1")
  while [[ -n $d ]]; do
    [[ $(stat -c %A -- "$d") == ?????????[xt] ]] || return 1
    d=${d%/*}
  done
}

as_user() {
  local user=$1
  shift
  setpriv --reuid="$user" --regid="$user" --init-groups -- env HOME=/nonexistent "$@"
}

uid_of() { id -u "$1"; }
gid_of() { getent group "$1" | cut -d: -f3; }
