# shellcheck shell=bash
# A certificate authority of the test's own, made with the openssl CLI, and
# redis-servers that speak TLS only; for tests/e2e/test_redis_tls.sh. Source
# it after common.sh:
#
#   make_pki                    $PKI/ca.crt, and $PKI/other-ca.crt that signed
#                               nothing of ours
#   make_cert NAME SAN [DATES]  $PKI/NAME.{key,crt} signed by ca.crt; SAN like
#                               DNS:localhost,IP:127.0.0.1; DATES "START END"
#                               (YYYYMMDDHHMMSSZ; default: valid for two days)
#   start_tls_redis NAME ARGS   a redis-server on a free loopback port,
#                               TLS only (--port 0), with $PKI/NAME.{crt,key},
#                               on 127.0.0.1 and 127.0.0.2; ARGS go to it;
#                               sets TLS_PORT and TLS_PID
#
# The servers are background jobs of the test: common.sh's clean-up stops them.

PKI=$T/pki

_pki_req() { # KEYFILE CSRFILE CN [SAN]
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1" -out "$2" \
    -subj "/CN=$3" ${4:+-addext "subjectAltName=$4"} 2>/dev/null
}

make_pki() {
  mkdir -p -- "$PKI"
  local ca
  for ca in ca other-ca; do
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
      -keyout "$PKI/$ca.key" -out "$PKI/$ca.crt" -subj "/CN=simba test $ca" 2>/dev/null ||
      fail "openssl cannot make the test's CA"
  done
  : >"$PKI/index.txt"
  echo 01 >"$PKI/serial"
  cat >"$PKI/ca.cnf" <<CNF
[ca]
default_ca = test
[test]
database = $PKI/index.txt
new_certs_dir = $PKI
serial = $PKI/serial
default_md = sha256
policy = any
copy_extensions = copy
unique_subject = no
[any]
commonName = supplied
CNF
}

make_cert() {
  local name=$1 san=$2 dates=${3:-}
  local start end
  if [[ -n $dates ]]; then
    read -r start end <<<"$dates"
  else
    start=$(date -u -d '-1 hour' +%Y%m%d%H%M%SZ) end=$(date -u -d '+2 days' +%Y%m%d%H%M%SZ)
  fi
  _pki_req "$PKI/$name.key" "$PKI/$name.csr" "$name" "$san" || fail "openssl cannot make $name's key"
  openssl ca -batch -notext -config "$PKI/ca.cnf" -cert "$PKI/ca.crt" -keyfile "$PKI/ca.key" \
    -in "$PKI/$name.csr" -out "$PKI/$name.crt" -startdate "$start" -enddate "$end" \
    >/dev/null 2>&1 || fail "openssl cannot sign $name's certificate"
}

start_tls_redis() {
  local name=$1 port attempt i pid dir=$T/redis-$1
  shift
  needs redis-server
  mkdir -p -- "$dir"
  for ((attempt = 0; attempt < 20; attempt++)); do
    port=$(random_server_port)
    : >"$dir/redis.log"
    redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 127.0.0.2 \
      --tls-cert-file "$PKI/$name.crt" --tls-key-file "$PKI/$name.key" \
      --tls-ca-cert-file "$PKI/ca.crt" --tls-auth-clients no \
      --save '' --appendonly no --daemonize no --dir "$dir" --logfile "$dir/redis.log" "$@" \
      </dev/null >/dev/null 2>&1 &
    pid=$!
    for ((i = 0; i < 100; i++)); do
      pid_alive "$pid" || break # the port was taken
      if grep -q 'Ready to accept connections' "$dir/redis.log"; then
        TLS_PORT=$port TLS_PID=$pid
        return 0
      fi
      sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  fail "could not start a TLS redis-server ($name): $(tail -3 "$dir/redis.log")"
}
