# A hostile or broken server for tests/e2e/test_*hostile_server.sh: it
# accepts any connection, reads the first request and answers with one
# announcement of an enormous reply, then (MODE) stalls or streams bytes
# forever. Writes its port to PORT_FILE once listening.
#
#   python3 hostile_server.py PROTOCOL ANNOUNCE MODE PORT_FILE
#   PROTOCOL redis: ANNOUNCE is sent as is (e.g. '*2147483647', '$2147483647')
#   PROTOCOL postgres: trust authentication, then a DataRow of ANNOUNCE bytes
#   PROTOCOL http (etcd's gateway): an HTTP/1.1 200 head, then ANNOUNCE:
#   'chunked' (Transfer-Encoding: chunked, then 1 MiB chunks), 'line' (the
#   same, one line that never ends: a watch stream's), a Content-Length, a
#   JSON object (starts with '{': every request of the connection gets it
#   as a whole answer), 'nested' (the same with {"kvs": and 20 million
#   nested arrays: 40 MB) or 'flat' ({"kvs": and an array of 30 million 0s)
#   MODE: stall (nothing more), or stream (':1' elements after '*N', bytes
#   otherwise, as fast as they go)
import os
import socket
import struct
import sys
import threading

protocol, announce, mode, port_file = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]


def pg_message(kind, body):
    return kind + struct.pack("!I", len(body) + 4) + body


def greet_postgres(c):
    # The startup packet (an SSLRequest first gets 'N': no TLS here).
    while True:
        length = struct.unpack("!I", c.recv(4, socket.MSG_WAITALL))[0]
        body = c.recv(length - 4, socket.MSG_WAITALL)
        if struct.unpack("!I", body[:4])[0] == 80877103:
            c.sendall(b"N")
            continue
        break
    params = b"".join(pg_message(b"S", k + b"\0" + v + b"\0") for k, v in
                      [(b"server_version", b"15.0"), (b"client_encoding", b"UTF8"),
                       (b"integer_datetimes", b"on"), (b"standard_conforming_strings", b"on")])
    c.sendall(pg_message(b"R", struct.pack("!I", 0)) + params +
              pg_message(b"K", struct.pack("!II", 1, 2)) + pg_message(b"Z", b"I"))
    c.recv(65536)  # the first query
    row = pg_message(b"T", struct.pack("!H", 1) + b"x\0" + struct.pack("!IHIhih", 0, 0, 25, -1, -1, 0))
    size = int(announce)  # a DataRow of that length: one column
    c.sendall(row + b"D" + struct.pack("!I", size) + struct.pack("!H", 1) + struct.pack("!i", size - 10))


def serve(c):
    try:
        if protocol == "redis":
            c.recv(65536)
            c.sendall(announce.encode() + b"\r\n")
        elif protocol == "http" and (announce.startswith("{") or announce in ("nested", "flat")):
            n = 20000000
            body = (b'{"kvs":' + b"[" * n + b"]" * n + b"}" if announce == "nested"
                    else b'{"kvs":[' + b"0," * 30000000 + b"0]}" if announce == "flat"
                    else announce.encode())
            while c.recv(65536):  # a request (each in one read: they are small)
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            return
        elif protocol == "http":
            c.recv(65536)
            chunked = announce in ("chunked", "line")
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" +
                      (b"Transfer-Encoding: chunked" if chunked else
                       b"Content-Length: " + announce.encode()) + b"\r\n\r\n")
            if chunked and mode == "stream":
                chunk = b"100000\r\n" + b"a" * (1 << 20) + b"\r\n"
                while True:
                    c.sendall(chunk)
        else:
            greet_postgres(c)
        if mode == "stream":
            chunk = (b":1\r\n" if announce.startswith("*") else b"a") * (1 << 20)
            while True:
                c.sendall(chunk)
        threading.Event().wait()
    except OSError:
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
