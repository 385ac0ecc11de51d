#!/usr/bin/env bash
# simba's own PostgreSQL client against a real server of the test's own
# (issue 33 §1): every authentication method a server may ask for
# (scram-sha-256, md5, password over TLS only, trust), a wrong password
# always 69 and never printed (also after a run that cached the SCRAM
# keys), TLS with libpq's sslmode meanings against a CA made here
# (verify-full: wrong name and unknown CA refused, naming why), ~/.pgpass
# and its permission rule, a Unix socket as host=, a host list,
# target_session_attrs, and libpq's environment (PGHOST...).
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname -- "${BASH_SOURCE[0]}")/postgres_common.sh"
"$SIMBA" --version | grep -q postgres || skip "simba was built without PostgreSQL"
start_own_postgres
export HOME=$T/user XDG_CACHE_HOME=$T/cache # ~/.pgpass, the SCRAM key cache
mkdir -p -- "$HOME"
unset PGHOST PGPORT PGUSER PGPASSWORD PGPASSFILE PGDATABASE PGSSLMODE PGSSLROOTCERT PGAPPNAME
data=$T/pg/data

# A CA, and the server's certificates for 127.0.0.1 only: a valid one, an
# expired one (tls_pki.sh).
source "$(dirname -- "${BASH_SOURCE[0]}")/tls_pki.sh"
make_pki
make_cert pg IP:127.0.0.1
make_cert old IP:127.0.0.1 "20200101000000Z 20200102000000Z"
for c in pg old; do
  cp -- "$PKI/$c.crt" "$PKI/$c.key" "$data/" && chmod 600 -- "$data/$c.key"
  ((EUID == 0)) && chown simba-pg: -- "$data/$c.key" "$data/$c.crt"
done
# Roles for each method (first match wins in pg_hba.conf).
{
  printf 'host all u_trust 127.0.0.1/32 trust\n'
  printf 'host all u_md5 127.0.0.1/32 md5\n'
  printf 'host all u_clear 127.0.0.1/32 password\n'
  cat -- "$data/pg_hba.conf"
} >"$T/hba" && cat -- "$T/hba" >"$data/pg_hba.conf"
pg_server_sql "SET password_encryption = 'md5'; CREATE ROLE u_md5 LOGIN PASSWORD 'md5-secret-pw';
  RESET password_encryption; CREATE ROLE u_clear LOGIN PASSWORD 'clear-secret-pw';
  CREATE ROLE u_trust LOGIN; GRANT CREATE ON SCHEMA public TO u_md5, u_clear, u_trust;" &&
  pg_server_sql "ALTER SYSTEM SET ssl_cert_file = 'pg.crt'" &&
  pg_server_sql "ALTER SYSTEM SET ssl_key_file = 'pg.key'" &&
  pg_server_sql "ALTER SYSTEM SET ssl = on" && pg_server_sql "SELECT pg_reload_conf()" >/dev/null ||
  fail "cannot set the server up"
wait_for 10 test "$(pg_server_sql 'SHOW ssl')" = on || fail "the server did not turn TLS on"

at=127.0.0.1:$PG_PORT/postgres
q="quarantine=off" n=0
# ok URI [ENV...]: simba runs; refused URI REASON [ENV...]: exit 69 saying
# REASON. Neither prints a password.
secrets=("$PG_PASSWORD" md5-secret-pw clear-secret-pw)
no_secret() {
  local s
  for s in "${secrets[@]}"; do
    ! grep -qF -- "$s" "$T/out" "$T/err" || fail "a password was printed: $(cat -- "$T/err")"
  done
}
ok() { # each run with tables of its own: the roles differ
  local uri="$1&prefix=auth$((++n))_"
  shift
  assert_exit 0 env "$@" "$SIMBA" run --timeout 5s --backend "$uri" --mutex m -- true
  no_secret
}
refused() {
  local uri=$1 reason=$2
  shift 2
  assert_exit 69 env "$@" "$SIMBA" run --timeout 5s --backend "$uri" --mutex m -- true
  grep -q -- "$reason" "$T/err" || fail "not refused for '$reason': $(cat -- "$T/err")"
  no_secret
}

# scram-sha-256: twice (the second from the key cache), then a wrong
# password, which the cached keys must not let in.
ok "postgres://simba:$PG_PASSWORD@$at?$q"
ok "postgres://simba:$PG_PASSWORD@$at?$q"
refused "postgres://simba:wrong-$PG_PASSWORD@$at?$q" 'password authentication failed'
ok "postgres://simba:$PG_PASSWORD@$at?$q&scram_cache=off"
# md5, trust
ok "postgres://u_md5:md5-secret-pw@$at?$q"
refused "postgres://u_md5:wrong-md5-secret-pw@$at?$q" 'password authentication failed'
ok "postgres://u_trust@$at?$q"
# The password in clear text: over TLS only.
ok "postgres://u_clear:clear-secret-pw@$at?$q&sslmode=require"
refused "postgres://u_clear:clear-secret-pw@$at?$q&sslmode=disable" 'clear text on a connection without TLS'
refused "postgres://u_clear:clear-secret-pw@$at?$q" 'clear text on a connection without TLS' PGSSLMODE=disable
refused "postgres://u_clear:wrong-clear-secret-pw@$at?$q&sslmode=require" 'password authentication failed'

# TLS verification.
ok "postgres://simba:$PG_PASSWORD@$at?$q&sslmode=verify-full&sslrootcert=$PKI/ca.crt"
ok "postgres://simba:$PG_PASSWORD@$at?$q" PGSSLMODE=verify-full PGSSLROOTCERT="$PKI/ca.crt"
# simba doctor names how sslmode checked the certificate, and warns of its
# end: the test's certificate ends in 2 days.
rc=0
"$SIMBA" doctor --backend "postgres://simba:$PG_PASSWORD@$at?$q&sslmode=verify-full&sslrootcert=$PKI/ca.crt" \
  >"$T/doctor.out" 2>&1 || rc=$?
assert_eq 1 "$rc" "doctor's exit with a certificate that ends in 2 days"
grep -q "the server's certificate is verified (against $PKI/ca.crt, and its name), but it expires .* (in 1 days)" \
  "$T/doctor.out" || fail "doctor on the certificate: $(cat -- "$T/doctor.out")"
! grep -qF "$PG_PASSWORD" "$T/doctor.out" || fail "doctor printed the password"
"$SIMBA" doctor --backend "postgres://simba:$PG_PASSWORD@$at?$q&sslmode=require" >"$T/doctor.out" 2>&1 || true
grep -q "the server's certificate is not verified (sslmode=require), but it expires" "$T/doctor.out" ||
  fail "doctor on an unverified certificate: $(cat -- "$T/doctor.out")"
refused "postgres://simba:$PG_PASSWORD@localhost:$PG_PORT/postgres?$q&sslmode=verify-full&sslrootcert=$PKI/ca.crt" \
  'hostname mismatch'
ok "postgres://simba:$PG_PASSWORD@localhost:$PG_PORT/postgres?$q&sslmode=verify-ca&sslrootcert=$PKI/ca.crt"
refused "postgres://simba:$PG_PASSWORD@$at?$q&sslmode=verify-full&sslrootcert=$PKI/other-ca.crt" 'not trusted'
refused "postgres://simba:$PG_PASSWORD@$at?$q&sslmode=verify-full" 'needs a root certificate'
# sslrootcert=system: the system's store as OpenSSL names it (SSL_CERT_DIR
# a hashed directory, SSL_CERT_FILE a file), read by simba's own OpenSSL;
# the machine's own store does not have our CA.
mkdir -p -- "$PKI/store" && cp -- "$PKI/ca.crt" "$PKI/store/" &&
  openssl rehash "$PKI/store" >/dev/null 2>&1 || fail "openssl rehash failed"
system="postgres://simba:$PG_PASSWORD@$at?$q&sslmode=verify-full&sslrootcert=system"
ok "$system" -u SSL_CERT_FILE SSL_CERT_DIR="$PKI/store"
ok "$system" -u SSL_CERT_DIR SSL_CERT_FILE="$PKI/ca.crt"
refused "$system" 'not trusted: unable to get local issuer certificate' -u SSL_CERT_FILE -u SSL_CERT_DIR

# ~/.pgpass: ignored while group or others may read it, as libpq does.
printf '127.0.0.1:%s:postgres:simba:%s\n' "$PG_PORT" "$PG_PASSWORD" >"$HOME/.pgpass"
chmod 644 -- "$HOME/.pgpass"
refused "postgres://simba@$at?$q" 'no password supplied.*was ignored'
chmod 600 -- "$HOME/.pgpass"
ok "postgres://simba@$at?$q"
mv -- "$HOME/.pgpass" "$T/passfile"
ok "postgres://simba@$at?$q" PGPASSFILE="$T/passfile"
refused "postgres://simba@$at?$q" 'no password supplied'

# Where: a Unix socket directory, a host list, the environment, the role.
sock=$(printf '%s' "$PG_SOCKET_DIR" | sed 's|/|%2F|g')
ok "postgres://simba:$PG_PASSWORD@/postgres?host=$sock&port=$PG_PORT&$q"
ok "postgres://simba:$PG_PASSWORD@127.0.0.1:1,127.0.0.1:$PG_PORT/postgres?$q"
ok "postgres://?$q" PGHOST=127.0.0.1 PGPORT="$PG_PORT" PGUSER=simba PGPASSWORD="$PG_PASSWORD" \
  PGDATABASE=postgres
ok "postgres://simba:$PG_PASSWORD@$at?$q&target_session_attrs=read-write"
refused "postgres://simba:$PG_PASSWORD@$at?$q&target_session_attrs=standby" 'not standby'
refused "postgres://simba:$PG_PASSWORD@$at?$q&service=x" 'service is not supported'

# An expired certificate: refused, saying so.
pg_server_sql "ALTER SYSTEM SET ssl_cert_file = 'old.crt'" &&
  pg_server_sql "ALTER SYSTEM SET ssl_key_file = 'old.key'" &&
  pg_server_sql "SELECT pg_reload_conf()" >/dev/null || fail "cannot change the certificate"
sleep 0.5 # the reload is asynchronous
refused "postgres://simba:$PG_PASSWORD@$at?$q&sslmode=verify-full&sslrootcert=$PKI/ca.crt" 'expired'
