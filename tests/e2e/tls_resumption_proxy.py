#!/usr/bin/env python3
"""A TCP relay in front of a TLS server that says which connections resumed
a TLS session.

    tls_resumption_proxy.py UPSTREAM_PORT PORT_FILE LOG_FILE

Listens on a free loopback port (written to PORT_FILE once it listens) and
relays each connection to 127.0.0.1:UPSTREAM_PORT unchanged. For each, it
reads the server's ServerHello (TLS records are plaintext up to there) and
appends a line to LOG_FILE: "resumed" when it carries the pre_shared_key
extension (RFC 8446 4.2.11: the server accepted a session the client
offered), "full" when not, "unknown" when it never came or was not TLS 1.3.
For tests/e2e/test_redis_tls.sh.
"""
import os
import socket
import sys
import threading

PRE_SHARED_KEY = 41


def server_hello_verdict(data):
    """'resumed', 'full' or None (not enough bytes yet, or no ServerHello)."""
    if len(data) < 5 or data[0] != 22:  # a handshake record
        return None
    body = data[5:5 + int.from_bytes(data[3:5], "big")]
    if len(body) < 4 or body[0] != 2:  # ServerHello
        return None
    hello = body[4:4 + int.from_bytes(body[1:4], "big")]
    at = 2 + 32  # legacy_version, random
    if len(hello) < at + 1:
        return None
    at += 1 + hello[at] + 2 + 1  # session id, cipher suite, compression
    if len(hello) < at + 2:
        return "full"  # no extensions: TLS 1.2, no PSK
    end = at + 2 + int.from_bytes(hello[at:at + 2], "big")
    at += 2
    while at + 4 <= min(end, len(hello)):
        kind = int.from_bytes(hello[at:at + 2], "big")
        if kind == PRE_SHARED_KEY:
            return "resumed"
        at += 4 + int.from_bytes(hello[at + 2:at + 4], "big")
    return "full"


def relay(src, dst, log_path=None):
    seen = b""
    verdict = None
    try:
        while True:
            chunk = src.recv(65536)
            if not chunk:
                break
            if log_path is not None and verdict is None and len(seen) < 16384:
                seen += chunk
                verdict = server_hello_verdict(seen)
                if verdict is not None:
                    with open(log_path, "a") as log:
                        log.write(verdict + "\n")
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        if log_path is not None and verdict is None:
            with open(log_path, "a") as log:
                log.write("unknown\n")
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    upstream, port_file, log_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(listener.getsockname()[1]))
    os.replace(port_file + ".tmp", port_file)
    while True:
        client, _ = listener.accept()
        server = socket.create_connection(("127.0.0.1", upstream))
        threading.Thread(target=relay, args=(client, server), daemon=True).start()
        threading.Thread(target=relay, args=(server, client, log_path), daemon=True).start()


if __name__ == "__main__":
    main()
