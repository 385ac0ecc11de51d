#!/usr/bin/env python3
"""A Redis in one of its "not now" states, in front of a real one.

    redis_refusing_proxy.py CODE UPSTREAM_PORT PORT_FILE [SECONDS]

Listens on a free loopback port (written to PORT_FILE once it listens) and
relays each connection to the redis-server on UPSTREAM_PORT, command by
command, except that for SECONDS from the first connection (default:
forever) the commands that a real server in state CODE refuses are
answered with CODE's error instead:

    LOADING     the dataset is being loaded (after a restart): all but
                AUTH, SELECT, INFO, ROLE, HELLO
    BUSY        a script runs past lua-time-limit: all but AUTH, HELLO
    MASTERDOWN  a replica that lost its master, replica-serve-stale-data
                no: all but AUTH, SELECT, INFO, ROLE, HELLO
    TRYAGAIN    a cluster slot being migrated: the scripts (EVAL, EVALSHA)

After SECONDS a connection relays everything (its pending commands too),
as the server does once it is ready. For tests/e2e/test_redis_refusals.sh.
"""
import os
import socket
import sys
import threading
import time

ERRORS = {
    "LOADING": b"-LOADING Redis is loading the dataset in memory\r\n",
    "BUSY": b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
            b"SHUTDOWN NOSAVE.\r\n",
    "MASTERDOWN": b"-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set "
                  b"to 'no'.\r\n",
    "TRYAGAIN": b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
}
ALLOWED = {
    "LOADING": {"AUTH", "SELECT", "INFO", "ROLE", "HELLO"},
    "BUSY": {"AUTH", "HELLO"},
    "MASTERDOWN": {"AUTH", "SELECT", "INFO", "ROLE", "HELLO"},
}
REFUSED_ONLY = {"TRYAGAIN": {"EVAL", "EVALSHA"}}


class Stream:
    """Buffered reads of RESP from a socket."""

    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        self.buf += data

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        i = self.buf.index(b"\r\n")
        out, self.buf = self.buf[:i + 2], self.buf[i + 2:]
        return out

    def exact(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def value(self):
        """One RESP2 value, as its raw bytes."""
        head = self.line()
        kind, n = head[:1], head[1:-2]
        if kind in (b"+", b"-", b":"):
            return head
        if kind == b"$":
            return head + (self.exact(int(n) + 2) if int(n) >= 0 else b"")
        if kind == b"*":
            return head + b"".join(self.value() for _ in range(max(int(n), 0)))
        raise ValueError("not RESP: %r" % head)

    def command(self):
        """(name, raw bytes) of the client's next command (an array of bulk
        strings, or an inline command)."""
        if not self.buf:
            self.fill()
        if self.buf[:1] != b"*":
            raw = self.line()
            return raw.split()[0].decode().upper() if raw.split() else "", raw
        head = self.line()
        raw, name = head, ""
        for i in range(int(head[1:-2])):
            arg = self.value()
            raw += arg
            if i == 0:
                name = arg.split(b"\r\n")[1].decode().upper()
        return name, raw


def refused(code, name):
    if code in REFUSED_ONLY:
        return name in REFUSED_ONLY[code]
    return name not in ALLOWED[code]


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(client, code, upstream_port, until):
    up = socket.create_connection(("127.0.0.1", upstream_port))
    c, u = Stream(client), Stream(up)
    try:
        while time.monotonic() < until:
            if not c.buf:  # wait for the client, but not past `until`
                left = until - time.monotonic()
                client.settimeout(max(0.01, left) if left < 3600 else None)
                try:
                    c.fill()
                except socket.timeout:
                    continue
                client.settimeout(None)
            name, raw = c.command()
            if time.monotonic() < until and refused(code, name):
                client.sendall(ERRORS[code])
            else:
                up.sendall(raw)
                client.sendall(u.value())
    except (EOFError, OSError):
        client.close()
        up.close()
        return
    client.settimeout(None)
    # Ready: everything relayed as it comes (subscriptions push on their own).
    if c.buf:
        up.sendall(c.buf)
    if u.buf:
        client.sendall(u.buf)
    threading.Thread(target=pump, args=(up, client), daemon=True).start()
    pump(client, up)


def main():
    code, upstream_port, port_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else float("inf")
    if code not in ERRORS:
        sys.exit("unknown code %s: one of %s" % (code, ", ".join(ERRORS)))
    until = None
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.getsockname()[1])
    os.rename(port_file + ".tmp", port_file)
    while True:
        client, _ = srv.accept()
        if until is None:  # SECONDS from the first connection
            until = time.monotonic() + seconds
        threading.Thread(target=serve, args=(client, code, upstream_port, until),
                         daemon=True).start()


if __name__ == "__main__":
    main()
