#!/usr/bin/env bash
# simba doctor on SQLite (issue 32 §2), for real: a healthy database is
# all ok (exit 0, one line per check; --json says the same); a database
# that does not exist, or a directory every user may write without the
# sticky bit, is a connection fail (exit 69, one line, the fix); a
# world-writable sticky directory, or a group-shared directory whose
# database its group cannot write, warns with the chmod/chgrp (exit 1);
# a FUSE file system (SIMBA_TEST_FSTYPE: none can be mounted here) fails;
# the backend's clock made to differ from this host's
# (SIMBA_TEST_WALL_CLOCK_SHIFT_MS: SQLite's clock, as after a step) warns
# within the lease margin and fails past it.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs jq

db_dir=$T/locks
mkdir -m 700 "$db_dir"
export SIMBA_BACKEND="sqlite:$db_dir/simba.db"

# verdict CHECK: the verdict of one check in $T/out (text)
verdict() { awk -v c="$1" '$2 == c { print $1 }' "$T/out"; }

# No database yet: one line, a fail, and what to do.
assert_exit 69 "$SIMBA" doctor
assert_eq 1 "$(wc -l <"$T/out")" "lines for a missing database ($(cat "$T/out"))"
grep -q "^fail  connection  no simba database at $db_dir/simba.db — fix: .*first simba run" "$T/out" ||
  fail "missing database: $(cat "$T/out")"
[[ ! -e $db_dir/simba.db ]] || fail "doctor created the database"
[[ ! -s $T/err ]] || fail "doctor wrote on stderr: $(cat "$T/err")"

# Healthy: every check ok.
"$SIMBA" run --mutex m -- true
assert_exit 0 "$SIMBA" doctor
for check in connection clock quarantine filesystem permissions inotify; do
  assert_eq ok "$(verdict "$check")" "$check ($(cat "$T/out"))"
done
assert_eq 6 "$(wc -l <"$T/out")" "one line per check ($(cat "$T/out"))"
grep -q "^ok    connection   sqlite://$db_dir/simba.db opened$" "$T/out" ||
  fail "connection line: $(cat "$T/out")"
assert_exit 0 "$SIMBA" doctor --json
assert_eq ok "$(jq -r .verdict "$T/out")" "JSON verdict"
assert_eq "connection clock quarantine filesystem permissions inotify" \
  "$(jq -r '[.findings[].check] | join(" ")' "$T/out")" "JSON checks"
assert_eq "sqlite://$db_dir/simba.db" "$(jq -r .backend "$T/out")" "JSON backend"
assert_eq null "$(jq -r '.findings[0].fix' "$T/out")" "JSON fix of an ok finding"

# A group-shared directory (setgid, group-writable) whose database and
# WAL files are private: its other members could not use it.
chmod 2770 "$db_dir"
group=$(id -gn)
assert_exit 1 "$SIMBA" doctor
assert_eq warn "$(verdict permissions)" "permissions of a private database in a shared directory"
grep -q "^warn  permissions  the directory is shared with group $group but its other members cannot write $db_dir/simba.db (group $group, mode 0600).* — fix: chgrp $group $db_dir/simba.db.*; chmod g+rw $db_dir/simba.db" "$T/out" ||
  fail "shared directory: $(cat "$T/out")"
# The fix, as printed, makes it ok.
fix=$(sed -n 's/^warn  permissions  .* — fix: //p' "$T/out")
sh -c "$fix"
assert_exit 0 "$SIMBA" doctor
assert_eq ok "$(verdict permissions)" "permissions after the fix ($fix)"

# Every user may write the directory, sticky (like /tmp): accepted, warned.
chmod 1777 "$db_dir"
assert_exit 1 "$SIMBA" doctor --json
assert_eq warn "$(jq -r '.findings[] | select(.check == "permissions") | .verdict' "$T/out")" \
  "permissions of a sticky world-writable directory"
jq -r '.findings[] | select(.check == "permissions") | .fix' "$T/out" | grep -q "install -d -m 700" ||
  fail "no fix for a world-writable directory: $(cat "$T/out")"
assert_eq warn "$(jq -r .verdict "$T/out")" "JSON verdict with a warning"

# ... and not sticky: refused at the open, a connection fail that says
# which chmod.
chmod 0777 "$db_dir"
assert_exit 69 "$SIMBA" doctor
assert_eq 1 "$(wc -l <"$T/out")" "lines for a refused directory ($(cat "$T/out"))"
grep -q "^fail  connection  refusing the database directory $db_dir: every user can write it and it is not sticky (chmod o-w, or +t).* — fix: " "$T/out" ||
  fail "world-writable directory: $(cat "$T/out")"
chmod 0700 "$db_dir"

# A FUSE file system over the network fails, another FUSE one warns.
assert_exit 69 env SIMBA_TEST_FSTYPE=fuse.sshfs "$SIMBA" doctor
assert_eq fail "$(verdict filesystem)" "fuse.sshfs"
grep -q "^fail  filesystem   $db_dir is on fuse.sshfs, shared by several hosts: .* — fix: put the database on a local file system" "$T/out" ||
  fail "fuse.sshfs: $(cat "$T/out")"
assert_exit 1 env SIMBA_TEST_FSTYPE=fuse.mergerfs "$SIMBA" doctor
assert_eq warn "$(verdict filesystem)" "fuse.mergerfs"

# The clock: 100 ms off is most of the margin of the default lease
# (2 ms + 1% of 12 s = 122 ms), 5 s is past it; a lease of 70 s has room
# for 100 ms.
assert_exit 1 env SIMBA_TEST_WALL_CLOCK_SHIFT_MS=100 "$SIMBA" doctor
assert_eq warn "$(verdict clock)" "clock 100 ms ahead"
grep -qE "^warn  clock        the backend's clock is \+(9[0-9]|1[0-9][0-9])ms from this host's .*is 122ms: .* — fix: synchronise" "$T/out" ||
  fail "clock 100 ms ahead: $(cat "$T/out")"
assert_exit 69 env SIMBA_TEST_WALL_CLOCK_SHIFT_MS=-5000 "$SIMBA" doctor --json
assert_eq fail "$(jq -r '.findings[] | select(.check == "clock") | .verdict' "$T/out")" "clock 5 s behind"
jq -r '.findings[] | select(.check == "clock") | .detail' "$T/out" | grep -qE -- "-(49|50)[0-9][0-9]ms" ||
  fail "clock 5 s behind, the offset: $(cat "$T/out")"
assert_exit 0 env SIMBA_TEST_WALL_CLOCK_SHIFT_MS=100 "$SIMBA" doctor --ttl 60s --transition 10s
assert_eq ok "$(verdict clock)" "clock 100 ms ahead, lease of 70 s"
grep -q "is 702ms" "$T/out" || fail "the margin of a 70 s lease: $(cat "$T/out")"

# Usage errors stay usage errors.
assert_exit 64 "$SIMBA" doctor --ttl 0
assert_exit 64 "$SIMBA" doctor --backend bogus://x
