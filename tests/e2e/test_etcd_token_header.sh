#!/usr/bin/env bash
# backends: sqlite
# A member that answers the login with a token holding CR LF: simba puts
# the token in the Authorization header of every call, to every member,
# so such a token would write headers of the member's choosing into the
# requests to the others. It is refused: exit 69, one line that says so,
# and no request ever carries the injected header.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
command -v python3 >/dev/null 2>&1 || skip "needs python3 (the fake gateway)"

python3 - "$T/port" "$T/requests" <<'PY' &
import http.server, json, sys

class Gateway(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(sys.argv[2], "a") as log:
            log.write(self.requestline + "\n" + str(self.headers) + "\n")
        if self.path == "/v3/auth/authenticate":
            answer = {"header": {"revision": "1"}, "token": "tok\r\nX-Injected: yes"}
        else:
            answer = {"header": {"revision": "1"}, "count": "0"}
        out = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", 0), Gateway)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
server.timeout = 20
for _ in range(50):
    server.handle_request()
PY
gateway=$!
trap 'kill "$gateway" 2>/dev/null || true' EXIT
wait_file "$T/port" 10
port=$(<"$T/port")

rc=0
SIMBA_ETCD_PASSWORD=pw "$SIMBA" run --no-wait --mutex m \
  --backend "etcd://127.0.0.1:$port?user=alice&timeout=2s" -- touch "$T/ran" 2>"$T/err" || rc=$?
assert_eq 69 "$rc" "exit of a run whose login got a token no header can carry"
grep -q "that no header can carry" "$T/err" || fail "not refused for its token: $(cat -- "$T/err")"
[[ ! -e $T/ran ]] || fail "CMD ran"
grep -q "/v3/auth/authenticate" "$T/requests" || fail "no login was asked: $(cat -- "$T/requests")"
if grep -qi "^X-Injected" "$T/requests"; then
  fail "a request carried the member's header: $(cat -- "$T/requests")"
fi
