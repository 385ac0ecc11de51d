#!/usr/bin/env python3
"""A tiny DNS server for tests/e2e/test_resolver_dns.sh: UDP and TCP on
port 53 of one loopback address, answering a few names under simba.test,
each a case simba's resolver must handle:

  redis.simba.test, pg.simba.test   A: the target address; AAAA: none
  alias.simba.test                  a CNAME to redis.simba.test, with its A
                                    record in the same answer
  big.simba.test                    over UDP: truncated (TC), no record; over
                                    TCP: the A record
  wrongid.simba.test                over UDP: first a reply with another id
                                    (A 192.0.2.1, an address nothing answers
                                    on), then the right one
  silent.simba.test                 no answer at all
  anything else                     NXDOMAIN

Every query is logged as "udp|tcp NAME A|AAAA" in --log.

    dns_server.py --address 127.53.1.2 --target 127.0.0.1 --log F --ready F
"""
import argparse
import socket
import struct
import sys
import threading

A, CNAME, AAAA = 1, 5, 28
TYPES = {A: "A", AAAA: "AAAA"}


def encode_name(name):
    out = b""
    for label in name.split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def parse_query(msg):
    """(id, name, qtype, question bytes) of a query."""
    qid = struct.unpack("!H", msg[:2])[0]
    at, labels = 12, []
    while msg[at]:
        labels.append(msg[at + 1 : at + 1 + msg[at]].decode().lower())
        at += 1 + msg[at]
    qtype = struct.unpack("!H", msg[at + 1 : at + 3])[0]
    return qid, ".".join(labels), qtype, msg[12 : at + 5]


def record(owner, rtype, rdata):
    return encode_name(owner) + struct.pack("!HHIH", rtype, 1, 60, len(rdata)) + rdata


def message(qid, question, records, rcode=0, truncated=False):
    flags = 0x8180 | rcode | (0x0200 if truncated else 0)
    return struct.pack("!HHHHHH", qid, flags, 1, len(records), 0, 0) + question + b"".join(records)


def answers(name, qtype, target, tcp):
    """The replies to send, in order: (id delta, records, rcode, truncated)."""
    a = socket.inet_aton(target)
    if name in ("redis.simba.test", "pg.simba.test"):
        return [(0, [record(name, A, a)] if qtype == A else [], 0, False)]
    if name == "alias.simba.test":
        chain = [record(name, CNAME, encode_name("redis.simba.test"))]
        if qtype == A:
            chain.append(record("redis.simba.test", A, a))
        return [(0, chain, 0, False)]
    if name == "big.simba.test":
        if not tcp:
            return [(0, [], 0, True)]
        return [(0, [record(name, A, a)] if qtype == A else [], 0, False)]
    if name == "wrongid.simba.test":
        bogus = [record(name, A, socket.inet_aton("192.0.2.1"))] if qtype == A else []
        right = [record(name, A, a)] if qtype == A else []
        return [(1, bogus, 0, False), (0, right, 0, False)]
    if name == "silent.simba.test":
        return []
    return [(0, [], 3, False)]


def replies(msg, target, tcp, log):
    qid, name, qtype, question = parse_query(msg)
    with open(log, "a") as f:
        f.write(f"{'tcp' if tcp else 'udp'} {name} {TYPES.get(qtype, qtype)}\n")
    return [
        message((qid + delta) & 0xFFFF, question, recs, rcode, tc)
        for delta, recs, rcode, tc in answers(name, qtype, target, tcp)
    ]


def serve_udp(sock, target, log):
    while True:
        msg, peer = sock.recvfrom(512)
        for r in replies(msg, target, False, log):
            sock.sendto(r, peer)


def read_exactly(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def serve_tcp(sock, target, log):
    while True:
        conn, _ = sock.accept()
        with conn:
            try:
                (n,) = struct.unpack("!H", read_exactly(conn, 2))
                for r in replies(read_exactly(conn, n), target, True, log):
                    conn.sendall(struct.pack("!H", len(r)) + r)
            except (ConnectionError, OSError):
                pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--address", required=True)
    p.add_argument("--target", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--ready", required=True)
    args = p.parse_args()
    try:
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind((args.address, 53))
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind((args.address, 53))
        tcp.listen(8)
    except OSError as e:
        print(f"dns_server.py: cannot listen on {args.address}:53: {e}", file=sys.stderr)
        sys.exit(2)
    threading.Thread(target=serve_tcp, args=(tcp, args.target, args.log), daemon=True).start()
    open(args.ready, "w").close()
    serve_udp(udp, args.target, args.log)


if __name__ == "__main__":
    main()
