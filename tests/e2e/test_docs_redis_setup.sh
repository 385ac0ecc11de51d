#!/usr/bin/env bash
# docs/backends/redis.md, "Set up the server in 5 minutes", run as printed
# where it can run here: the openssl commands make the CA and the server's
# certificate, a redis-server starts on the redis.conf lines shown (TLS
# only, the ACL user `simba`, AOF, noeviction), and the client's lines run
# against it (their first lease waits the quarantine of a fresh database,
# as the page says). What cannot run here is replaced: `sudo` and the
# package install dropped, the paths under /etc moved into the test's
# directory, the host redis.internal made localhost, the port a free one.
# The conf's `user simba` line must also be the ACL of "ACL users" (the
# one test_redis_acl runs), so that the two cannot drift apart.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
needs redis-server openssl
page=$_e2e_root/docs/backends/redis.md
[[ -f $page ]] || fail "no $page"
PATH="$(dirname -- "$SIMBA"):$PATH"
export PATH

block() { # NAME: the fenced block after its marker
  awk -v marker="<!-- runnable: $1 (tests/e2e/test_docs_redis_setup.sh) -->" '
    $0 == marker { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$page"
}
# local_paths: /etc/redis/tls and /etc/simba into $T; redis.internal is localhost.
local_paths() { sed -e "s#/etc/redis/tls#$T/tls#g" -e "s#/etc/simba/#$T/tls/#g" -e 's/redis\.internal/localhost/g'; }

tls=$(block redis-setup-tls)
conf=$(block redis-setup-conf)
client=$(block redis-setup-client)
[[ -n $tls && -n $conf && -n $client ]] || fail "docs/backends/redis.md: a marked set-up block is missing"

# The ACL of the conf is the ACL of "ACL users".
acl=$(grep -m1 '^ACL SETUSER simba on ' "$page") || fail "no ACL SETUSER line in $page"
user=$(grep -m1 '^user simba on ' <<<"$conf") || fail "the redis.conf has no 'user simba' line"
assert_eq "${acl#ACL SETUSER simba on >PASSWORD }" "${user#user simba on >SIMBA-PASSWORD }" \
  "the conf's user simba against the ACL of \"ACL users\""

# The certificates, by the page's commands (sudo and what needs root dropped).
mkdir -p "$T/tls"
grep -vE '^(sudo apt-get|sudo chown)' <<<"$tls" | grep -v '^#' | sed -E 's/(^|; |&& )sudo /\1/g' |
  sed -E 's/^(sudo )?install -d .*&& cd (.*)$/cd \2/' | local_paths >"$T/tls.sh"
grep -q 'openssl x509 -req' "$T/tls.sh" || fail "the page no longer signs a certificate: $(cat "$T/tls.sh")"
(cd "$T" && bash -e "$T/tls.sh") >"$T/tls.out" 2>&1 || fail "the page's openssl commands failed: $(cat "$T/tls.out")"
openssl verify -CAfile "$T/tls/ca.crt" "$T/tls/redis.crt" >/dev/null ||
  fail "the server's certificate does not chain to the CA"
openssl x509 -in "$T/tls/redis.crt" -noout -ext subjectAltName | grep -q 'DNS:localhost' ||
  fail "the certificate does not name the host (subjectAltName)"

# The server, on the page's conf lines.
for ((attempt = 0; attempt < 20; attempt++)); do
  port=$(random_server_port)
  local_paths <<<"$conf" | sed -e 's/^bind 0\.0\.0\.0$/bind 127.0.0.1/' -e "s/^tls-port 6379$/tls-port $port/" >"$T/redis.conf"
  printf 'dir %s\nlogfile %s\ndaemonize no\n' "$T" "$T/redis.log" >>"$T/redis.conf"
  grep -q "^tls-port $port$" "$T/redis.conf" || fail "the conf has no 'tls-port 6379' line"
  : >"$T/redis.log"
  redis-server "$T/redis.conf" </dev/null >/dev/null 2>&1 &
  redis_pid=$!
  for ((i = 0; i < 100; i++)); do
    pid_alive "$redis_pid" || break
    grep -q 'Ready to accept connections' "$T/redis.log" && break 2
    sleep 0.05
  done
  kill -KILL "$redis_pid" 2>/dev/null || true
  wait "$redis_pid" 2>/dev/null || true
done
grep -q 'Ready to accept connections' "$T/redis.log" || fail "redis-server did not start on the page's conf: $(tail -5 "$T/redis.log")"

# The client's lines, as a host runs them.
local_paths <<<"$client" | sed "s/localhost:6379/localhost:$port/g" >"$T/client.sh"
grep -q "localhost:$port" "$T/client.sh" || fail "the client's lines no longer name redis.internal:6379"
assert_exit 0 timeout 60 bash -e "$T/client.sh"
grep -q '^held on localhost$' "$T/out" || fail "the client's run did not run: $(cat "$T/out")"
grep -Eq '^hello +free ' "$T/out" || fail "the client's status does not show the mutex: $(cat "$T/out")"
grep -q 'in quarantine' "$T/err" || fail "the first lease did not wait the quarantine the page speaks of: $(cat "$T/err")"
