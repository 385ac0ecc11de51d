# A fake PostgreSQL server for tests/e2e/test_postgres_fake_server.sh: it
# takes the start-up message and then misbehaves during authentication in
# one way (MODE). Writes its port to PORT_FILE once listening.
#
#   python3 pg_fake_server.py MODE PORT_FILE
#   MODE bad-signature: a full SCRAM exchange whose server signature is wrong
#        no-signature: SCRAM, then AuthenticationOk without the signature
#        huge-iterations: SCRAM with an iteration count of 2^31 - 1
#        truncated: an authentication request shorter than its code
#        cut: half a message, then the connection closed
#        unknown-auth: an authentication request of code 99
#        gss: a GSSAPI authentication request
#        cleartext: the password in clear text, on a plain connection
#        error: an ErrorResponse in the middle of SCRAM
import base64
import os
import socket
import struct
import sys
import threading

mode, port_file = sys.argv[1], sys.argv[2]


def msg(kind, body):
    return kind + struct.pack("!I", len(body) + 4) + body


def auth(code, data=b""):
    return msg(b"R", struct.pack("!I", code) + data)


def read_startup(c):
    while True:  # an SSLRequest gets 'N': no TLS here
        length = struct.unpack("!I", c.recv(4, socket.MSG_WAITALL))[0]
        body = c.recv(length - 4, socket.MSG_WAITALL)
        if struct.unpack("!I", body[:4])[0] != 80877103:
            return
        c.sendall(b"N")


def read_message(c):
    head = c.recv(5, socket.MSG_WAITALL)
    length = struct.unpack("!I", head[1:5])[0]
    return c.recv(length - 4, socket.MSG_WAITALL)


def scram(c, iterations):
    c.sendall(auth(10, b"SCRAM-SHA-256\0\0"))
    body = read_message(c)  # mechanism, length, client-first
    first = body[body.index(b"\0") + 5:].decode()
    client_nonce = first.split("r=", 1)[1]
    salt = base64.b64encode(b"0123456789abcdef").decode()
    server_first = "r=%sSERVERNONCE,s=%s,i=%d" % (client_nonce, salt, iterations)
    c.sendall(auth(11, server_first.encode()))


def serve(c):
    try:
        read_startup(c)
        if mode in ("bad-signature", "no-signature", "error"):
            scram(c, 4096)
            read_message(c)  # client-final
            if mode == "error":
                c.sendall(msg(b"E", b"SFATAL\0C28000\0Mthe fake server says no\0\0"))
            elif mode == "bad-signature":
                c.sendall(auth(12, b"v=" + base64.b64encode(b"x" * 32)) + auth(0))
            else:
                c.sendall(auth(0) + msg(b"Z", b"I"))
        elif mode == "huge-iterations":
            scram(c, 2**31 - 1)
        elif mode == "truncated":
            c.sendall(b"R" + struct.pack("!I", 6) + b"\0\0")
        elif mode == "cut":
            c.sendall(b"R" + struct.pack("!I", 12) + b"\0\0")
            c.close()
            return
        elif mode == "unknown-auth":
            c.sendall(auth(99))
        elif mode == "gss":
            c.sendall(auth(7))
        elif mode == "cleartext":
            c.sendall(auth(3))
        threading.Event().wait(30)  # whatever comes: no answer
    except (OSError, ValueError, IndexError, struct.error):
        pass


s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
with open(port_file + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
while True:
    conn, _ = s.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
