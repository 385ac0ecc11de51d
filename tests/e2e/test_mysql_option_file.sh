#!/usr/bin/env bash
# MySQL's password from the [client] group of an option file: ~/.my.cnf,
# or ?option-file=; only when neither the URI nor SIMBA_MYSQL_PASSWORD
# gives one (URI > SIMBA_MYSQL_PASSWORD > file). A file its group or
# everyone may write is not read: ~/.my.cnf is skipped (the refused login
# says why), a named one is an error (69). A refused login says where the
# password came from, or that none was found. The password is never printed.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/mysql_common.sh"
use_test_mysql
[[ $SIMBA_BACKEND =~ ^mysql://([^:@]+):([^@]+)@(.*)$ ]] || fail "no password in $SIMBA_BACKEND"
user=${BASH_REMATCH[1]} pw=${BASH_REMATCH[2]} rest=${BASH_REMATCH[3]}
bare="mysql://$user@$rest" # the URI without its password
unset SIMBA_MYSQL_PASSWORD
export HOME=$T/home
mkdir -p "$HOME"
no_password_shown() { ! grep -qF -- "$pw" "$T/out" "$T/err" || fail "the password was printed: $(<"$T/err")"; }

# ~/.my.cnf: the [client] password (quoted, after other groups' and a
# comment; the last one of [client] counts).
cat >"$HOME/.my.cnf" <<CNF
# the mysql client's file
[mysqld]
password = not-this-one
[client]
user = someone-else
password = first-not-this
password = "$pw"   # quoted
[mysql]
password = nor-this
CNF
chmod 600 "$HOME/.my.cnf"
assert_exit 0 "$SIMBA" run --backend "$bare" --mutex m -- true
# The URI's user, not the file's.
assert_exit 0 "$SIMBA" status --backend "$bare" --mutex m
no_password_shown

# SIMBA_MYSQL_PASSWORD wins over the file, the URI's password over both.
assert_exit 69 env SIMBA_MYSQL_PASSWORD=wrong "$SIMBA" run --backend "$bare" --mutex m -- true
assert_exit 0 env SIMBA_MYSQL_PASSWORD=wrong "$SIMBA" run --backend "$SIMBA_BACKEND" --mutex m -- true

# Writable by the group: skipped, and the refused login says so.
chmod 620 "$HOME/.my.cnf"
assert_exit 69 "$SIMBA" run --backend "$bare" --mutex m -- true
grep -q "$HOME/.my.cnf may be written by its group (chmod go-w it): not read" "$T/err" ||
  fail "the skipped file is not named: $(<"$T/err")"
no_password_shown

# ?option-file=: read instead of ~/.my.cnf; missing or unsafe: 69.
printf '[client]\npassword=%s\n' "$pw" >"$T/simba.cnf"
chmod 600 "$T/simba.cnf"
assert_exit 0 "$SIMBA" run --backend "$bare&option-file=$T/simba.cnf" --mutex m -- true
chmod 602 "$T/simba.cnf"
assert_exit 69 "$SIMBA" run --backend "$bare&option-file=$T/simba.cnf" --mutex m -- true
grep -q "option file $T/simba.cnf may be written by everyone" "$T/err" || fail "unsafe named file: $(<"$T/err")"
no_password_shown
assert_exit 69 "$SIMBA" run --backend "$bare&option-file=$T/none.cnf" --mutex m -- true
grep -q "cannot read the option file $T/none.cnf" "$T/err" || fail "missing named file: $(<"$T/err")"
assert_exit 64 "$SIMBA" run --backend "$bare&option-file=relative.cnf" --mutex m -- true

# A refused login says where the password came from, or that none was found.
assert_exit 69 env SIMBA_MYSQL_PASSWORD=wrong "$SIMBA" run --backend "$bare" --mutex m -- true
grep -qF "(the password came from SIMBA_MYSQL_PASSWORD)" "$T/err" || fail "refused, env: $(<"$T/err")"
rm -f -- "$HOME/.my.cnf"
assert_exit 69 "$SIMBA" run --backend "$bare" --mutex m -- true
grep -qF "(no password: give it in SIMBA_MYSQL_PASSWORD or the [client] group of ~/.my.cnf)" "$T/err" ||
  fail "refused, no password anywhere: $(<"$T/err")"
# A database the user may not use (1044): the password was right, no word of it.
nodb="mysql://$user@${rest%%/*}/simba_no_such_db"
assert_exit 69 env SIMBA_MYSQL_PASSWORD="$pw" "$SIMBA" run --backend "$nodb" --mutex m -- true
grep -q "ERROR 1044" "$T/err" || fail "not 1044: $(<"$T/err")"
! grep -q "the password came from" "$T/err" || fail "1044 blames the password: $(<"$T/err")"
