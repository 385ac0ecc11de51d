#!/usr/bin/env bash
# A row that another writer put in the database may hold any bytes: status's
# table and simba's messages escape them (\xNN), so a stored name or owner
# cannot clear the screen or forge lines; and release --force can name that
# mutex as the table shows it.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

simba_bounded() { timeout -k 5 30 "$SIMBA" "$@"; }
needs sqlite3 jq
db=$T/simba.db

# A real lease, held long enough to be shown, then renamed with control
# characters in its name and owner (as a hostile writer of the file could).
"$SIMBA" run --mutex m --ttl 30s -- sh -c 'touch "$0"; exec sleep 60' "$T/held" &
holder=$!
wait_file "$T/held" 10
kill -STOP "$holder" # it renews no more: the row stays as we write it
sqlite3 "$db" "UPDATE simba_mutex SET mutex = 'ev' || char(27) || '[2Jil' || char(10) || 'FORGED', \
  owner_id = 'own' || char(27) || ']0;pwn' || char(7) || 'er' WHERE mutex = 'm'"

assert_exit 0 simba_bounded status
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$T/out"; then
  fail "status printed control characters: $(od -c "$T/out" | head)"
fi
mapfile -t lines < <(grep -v '^ ' "$T/out") # the lines under a row are indented
((${#lines[@]} == 2)) || fail "expected a header and one row, got: $(cat -- "$T/out")"
grep -qF 'ev\x1b[2Jil\x0aFORGED' "$T/out" || fail "the name is not shown escaped: $(cat -- "$T/out")"
grep -qF 'own\x1b]0;pwn' "$T/out" || fail "the owner is not shown escaped (cut to the column): $(cat -- "$T/out")"

# The JSON keeps the bytes (JSON-escaped), for programs.
assert_exit 0 simba_bounded status --json
jq -e '.mutexes[0].mutex == "ev\u001b[2Jil\nFORGED"' "$T/out" >/dev/null ||
  fail "status --json changed the name: $(cat -- "$T/out")"

# release --force takes the name as the table shows it.
assert_exit 0 simba_bounded release --force --mutex 'ev\x1b[2Jil\x0aFORGED'
grep -q "revoked the lease of" "$T/err" || fail "not revoked: $(cat -- "$T/err")"
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$T/err"; then fail "release printed control characters"; fi
state=$(sqlite3 "$db" "SELECT owner_id FROM simba_mutex WHERE mutex = 'ev' || char(27) || '[2Jil' || char(10) || 'FORGED'")
assert_eq "" "$state" "owner of the hostile row after release --force"
assert_exit 64 simba_bounded release --force --mutex 'bad\q'
{ kill -KILL "$holder" && wait "$holder"; } 2>/dev/null || true
