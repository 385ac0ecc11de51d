# A fake MySQL server for tests/e2e/test_mysql_fake_server.sh: it greets
# (or not) and then misbehaves during the handshake in one way (MODE).
# Writes its port to PORT_FILE once listening.
#
#   python3 mysql_fake_server.py MODE PORT_FILE
#   MODE truncated: a greeting cut short inside its scramble
#        cut: half a packet, then the connection closed
#        error-greeting: an ERR packet instead of the greeting (too many connections)
#        error-login: an ERR packet answering the login (access denied)
#        ed25519: an authentication switch to client_ed25519
#        caching-sha2: a greeting announcing caching_sha2_password, then its "more data"
#        old-protocol: a greeting of protocol 9
#        silent: a greeting, then nothing at all (the client's timeout ends it)
#        endless-rows: a login accepted, then a result set of one column whose
#             rows (one empty value each, 5 bytes) never end
#        endless-oks: a login accepted, then OK packets that each say more
#             results follow, without end
import os
import socket
import struct
import sys
import threading
import time

mode, port_file = sys.argv[1], sys.argv[2]


def packet(seq, payload):
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


def greeting(plugin=b"mysql_native_password", protocol=10):
    caps = 0x0200 | 0x8000 | 0x80000 | 0x10000 | 0x20000 | 0x2000 | 0x8 | 0x1
    return (bytes([protocol]) + b"10.11.99-fake\0" + struct.pack("<I", 7) + b"abcdefgh\0"
            + struct.pack("<H", caps & 0xffff) + bytes([45]) + struct.pack("<H", 2)
            + struct.pack("<H", caps >> 16) + bytes([21]) + b"\0" * 10 + b"ijklmnopqrst\0"
            + plugin + b"\0")


def error(code, state, text):
    return b"\xff" + struct.pack("<H", code) + b"#" + state + text


def read_packet(c):
    head = c.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        return None
    n = head[0] | head[1] << 8 | head[2] << 16
    return c.recv(n, socket.MSG_WAITALL)


def serve(c):
    try:
        if mode == "truncated":
            g = greeting()
            c.sendall(packet(0, g[:20]))
        elif mode == "cut":
            c.sendall(packet(0, greeting())[:15])
        elif mode == "error-greeting":
            c.sendall(packet(0, error(1040, b"08004", b"Too many connections")))
        elif mode == "old-protocol":
            c.sendall(packet(0, greeting(protocol=9)))
        elif mode == "caching-sha2":
            c.sendall(packet(0, greeting(b"caching_sha2_password")))
            read_packet(c)
            c.sendall(packet(2, b"\x01\x04"))
        else:
            c.sendall(packet(0, greeting()))
            read_packet(c)
            if mode == "error-login":
                c.sendall(packet(2, error(1045, b"28000", b"Access denied for user 'u'")))
            elif mode == "ed25519":
                c.sendall(packet(2, b"\xfe" + b"client_ed25519\0" + b"x" * 32))
            elif mode == "silent":
                time.sleep(30)
            elif mode == "endless-oks":
                c.sendall(packet(2, b"\0\0\0\2\0\0\0"))
                read_packet(c)
                oks = b"".join(packet(i & 0xff, b"\0\0\0\x0a\0\0\0") for i in range(1, 65537))
                while True:
                    c.sendall(oks)
            elif mode == "endless-rows":
                c.sendall(packet(2, b"\0\0\0\2\0\0\0"))
                read_packet(c)
                c.sendall(packet(1, b"\1") + packet(2, b"\3def\0\0\0\1x\0\x0c" + b"\0" * 12)
                          + packet(3, b"\xfe\0\0\2\0"))
                rows = b"".join(packet(i & 0xff, b"\0") for i in range(4, 4 + 65536))
                while True:
                    c.sendall(rows)
        time.sleep(1)
    except OSError:
        pass
    finally:
        c.close()


s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(16)
with open(port_file + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
while True:
    conn, _ = s.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
