#!/usr/bin/env bash
# shellcheck disable=SC2016 # $vars in single quotes are for the sh -c CMDs
# Hostile files (issue 13 §5), with a second Unix user as the attacker:
# root's simba refuses (69, one line) a database directory or notification
# directory another user owns or can write, a database another user owns or
# can write, a database that is a symlink, a -wal file another user made; it
# never follows a link in the notification directory, so a planted link
# neither makes a file where it points (/etc/nologin) nor touches the
# times of what it points to. SQLite only; root.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/users.sh"
need_users
X=$E2E_USER_C # the attacker: no member of anything

# fnv1a NAME: the hash that names a mutex's files in the notification directory
fnv1a() {
  local s=$1 h=$((0xcbf29ce484222325)) i c
  for ((i = 0; i < ${#s}; i++)); do
    printf -v c '%d' "'${s:i:1}"
    h=$(((h ^ c) * 1099511628211))
  done
  printf '%016x\n' "$h"
}
hash=$(fnv1a m)

# Targets the attacker would like root to create or touch.
nologin=$T/nologin # stands for /etc/nologin: must never appear
victim=$T/victim   # a root-owned file whose times must not change
echo keep >"$victim"
chmod 600 "$victim"
touch -d '2001-01-01 00:00:00' "$victim"
victim_times() { stat -c '%X %Y %Z %s' "$victim"; }
victim_before=$(victim_times)

# plant DIR: as the attacker, a notification directory full of links
plant() {
  as_user "$X" sh -c '
    mkdir -m 777 "$1" 2>/dev/null || true
    ln -sf "$2" "$1/$4"
    ln -sf "$3" "$1/$4.w.00000000000000000001.1"
    ln -sf "$3" "$1/$4.w.00000000000000000002.999999"' \
    sh "$1" "$nologin" "$victim" "$hash"
}

untouched() {
  [[ ! -e $nologin ]] || fail "$1: simba made the file a planted link points to"
  assert_eq "$victim_before" "$(victim_times)" "$1: the times of the file a planted link points to"
}

# refused NEEDLE CMD...: exit 69, one line saying NEEDLE, CMD never ran
refused() {
  local needle=$1
  shift
  rm -f -- "$T/ran"
  assert_exit 69 "$@"
  [[ $(wc -l <"$T/err") == 1 ]] || fail "expected one line: $(<"$T/err")"
  grep -qF -- "$needle" "$T/err" || fail "the error does not say [$needle]: $(<"$T/err")"
  [[ ! -e $T/ran ]] || fail "CMD ran"
}

# --- a world-writable SIMBA_HOME (the issue's setting) ---------------------------
home=$T/world
mkdir -m 777 "$home"
chmod 777 "$home"
plant "$home/simba.db.notify"
export SIMBA_BACKEND=sqlite:$home/simba.db
refused "refusing the database directory $home: every user can write it" \
  "$SIMBA" run --mutex m -- touch "$T/ran"
refused "refusing the database directory $home" "$SIMBA" status
refused "refusing the database directory $home" "$SIMBA" release --force --mutex m
untouched "world-writable directory"
[[ ! -e $home/simba.db ]] || fail "a database was made in a world-writable directory"

# --- a sticky world-writable directory (like /tmp): the attacker's notify dir ---
pub=$T/sticky
mkdir -m 1777 "$pub"
chmod 1777 "$pub"
plant "$pub/simba.db.notify"
export SIMBA_BACKEND=sqlite:$pub/simba.db
refused "refusing the notification directory $pub/simba.db.notify: it belongs to another user" \
  "$SIMBA" run --mutex m -- touch "$T/ran"
untouched "the attacker's notification directory"
rm -rf -- "$pub/simba.db.notify"

# ... a -wal file the attacker made before root's first use
as_user "$X" sh -c 'umask 0; : >"$1"' sh "$pub/simba.db-wal"
refused "its -wal file was made by another user" "$SIMBA" run --mutex m -- touch "$T/ran"
rm -f -- "$pub"/simba.db*

# ... a database the attacker owns and made 0666
as_user "$X" "$SIMBA_ANY" run --backend "sqlite:$pub/simba.db" --mutex m -- true ||
  fail "the attacker could not make a database"
as_user "$X" chmod 666 "$pub/simba.db" "$pub/simba.db-wal" "$pub/simba.db-shm"
refused "refusing the database $pub/simba.db: it belongs to another user" \
  "$SIMBA" run --mutex m -- touch "$T/ran"
# Given to the attacker in root's own directory: the same.
mine=$T/mine
mkdir -m 755 "$mine"
"$SIMBA" run --backend "sqlite:$mine/simba.db" --mutex m -- true
chown "$X" "$mine/simba.db"
chmod 666 "$mine/simba.db"
refused "refusing the database $mine/simba.db: it belongs to another user" \
  "$SIMBA" run --backend "sqlite:$mine/simba.db" --mutex m -- touch "$T/ran"
chown root "$mine/simba.db"
refused "refusing the database $mine/simba.db: every user can write it" \
  "$SIMBA" run --backend "sqlite:$mine/simba.db" --mutex m -- touch "$T/ran"
rm -f -- "$pub"/simba.db*

# ... simba.db a symlink to an empty root-owned file
rootfile=$T/rootfile
: >"$rootfile"
chmod 600 "$rootfile"
as_user "$X" ln -s "$rootfile" "$pub/simba.db"
refused "refusing the database $pub/simba.db: it is a symbolic link" \
  "$SIMBA" run --mutex m -- touch "$T/ran"
refused "symbolic link" "$SIMBA" status
assert_eq 0 "$(stat -c %s "$rootfile")" "size of the file behind the simba.db link"
rm -f -- "$pub/simba.db"

# ... a directory reached through the attacker's symlink: no database is made
# where it leads (a directory root may write)
rootdir=$T/rootdir
mkdir -m 700 "$rootdir"
as_user "$X" ln -s "$rootdir" "$pub/link"
refused "the path goes through $pub/link, a symbolic link of another user" \
  "$SIMBA" run --backend "sqlite:$pub/link/simba.db" --mutex m -- touch "$T/ran"
assert_eq "" "$(ls -A -- "$rootdir")" "files made behind the attacker's link"
rm -f -- "$pub/link"

# --- links in a notification directory simba trusts are never followed ----------
priv=$T/priv
mkdir -m 700 "$priv"
export SIMBA_BACKEND=sqlite:$priv/simba.db
"$SIMBA" run --mutex m -- true
mkdir -p -m 700 "$priv/simba.db.notify"
ln -s "$nologin" "$priv/simba.db.notify/$hash"
ln -s "$victim" "$priv/simba.db.notify/$hash.w.00000000000000000001.1"
# A hand-over: the release skips the planted "waiter" and wakes the real one.
"$SIMBA" run --mutex m --ttl 20s -- sh -c 'touch "$0"; sleep 1' "$T/held" &
holder=$!
wait_for 10 test -e "$T/held"
"$SIMBA" run --mutex m --ttl 20s -- sh -c 'date +%s%3N >"$0"' "$T/woke" &
waiter=$!
wait "$holder"
t0=$(now_ms)
wait "$waiter"
dt=$(($(<"$T/woke") - t0))
((dt < 2000)) || fail "the waiter was not woken (${dt} ms)"
# A forced release (it touches the mutex's broadcast file), and an owner that
# watches for one.
"$SIMBA" run --mutex m --ttl 3s -- sh -c 'touch "$0"; sleep 30' "$T/held2" &
holder=$!
wait_for 10 test -e "$T/held2"
sleep 0.5 # the owner sets its watch up after 200 ms
assert_exit 0 "$SIMBA" release --force --mutex m
wait "$holder" || true
untouched "links in a trusted notification directory"
[[ -L $priv/simba.db.notify/$hash ]] || fail "the planted link was replaced"
