"""A fault-injecting TCP proxy on loopback: one Link per (host, server).

This kernel has no `tc netem`, so the harness carries its network faults
itself. A Link listens on a free 127.0.0.1 port and forwards every
connection to its server; the harness flips its faults from its own thread:

* hold_up / hold_down: a blackhole one way (client to server, server to
  client) or both. Connections stay open and bytes stop; they are delivered
  when the link heals, as TCP would retransmit them, unless the connection
  was closed or reset meanwhile. A request that arrives late at the server
  is the nasty case a partition makes.
* delay_s / jitter_s: every chunk is delivered delay ± jitter after it was
  read, in order.
* reset_next: the next reply from the server is dropped and both sides are
  reset (RST): the server did the call, the client never learns it.
* cut_from: a set of names; a connection whose client `source_of` names
  (a callable given the client's port, called once, the first time bytes
  pass while the set is not empty) is held both ways while its name is in
  the set: the links of a cluster's peers, shared by every member, cut one
  member off (tests/e2e/etcd_peer_links.py).

All Links share one asyncio loop in a daemon thread of the harness, so they
die with it however it dies. A Link may listen in another network
namespace (a Sentinel run's hosts), on the server's own port there; it
connects to the server from the harness's namespace. A LinkGroup takes a
fault on all the links of one host at once.
"""
import asyncio
import contextlib
import ctypes
import os
import random
import socket
import struct
import threading
import time

POLL_S = 0.01


class Link:
    """`netns`: a network namespace (a /proc/PID/ns/net path) to listen in,
    on `port` (0: any free one); the connections to the server are made
    from the harness's own namespace."""

    def __init__(self, name, target_port, loop, netns=None, port=0, source_of=None):
        self.name, self.target_port, self.loop = name, target_port, loop
        self.source_of = source_of
        self.cut_from = set()
        self.hold_up = self.hold_down = False
        self.delay_s = self.jitter_s = 0.0
        self.reset_next = False
        self.resets = 0
        self.conns = set()
        self.rng = random.Random(hash(name))
        with in_netns(netns):
            sock = socket.socket()  # a socket stays in the namespace it was made in
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        self.port = sock.getsockname()[1]
        fut = asyncio.run_coroutine_threadsafe(self._serve(sock), loop)
        self.server = fut.result(10)

    def heal(self):
        self.hold_up = self.hold_down = False
        self.delay_s = self.jitter_s = 0.0
        self.reset_next = False
        self.cut_from = set()

    def faulty(self):
        return (self.hold_up or self.hold_down or self.delay_s > 0 or self.reset_next
                or bool(self.cut_from))

    async def _serve(self, sock):
        return await asyncio.start_server(self._accept, sock=sock)

    async def _accept(self, creader, cwriter):
        try:
            sreader, swriter = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            _reset(cwriter)  # the server is down: refused, as without a proxy
            return
        conn = (cwriter, swriter)
        self.conns.add(conn)
        source = None
        if self.source_of is not None:
            source = _Source(self.source_of, cwriter.get_extra_info("peername")[1])
        try:
            await asyncio.gather(self._pump(creader, swriter, "up", conn, source),
                                 self._pump(sreader, cwriter, "down", conn, source))
        finally:
            self.conns.discard(conn)
            for w in conn:
                w.close()

    async def _pump(self, reader, writer, direction, conn, source=None):
        queue = asyncio.Queue()
        sender = asyncio.ensure_future(self._send(queue, writer, direction, source))
        last = 0.0
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                if direction == "down" and self.reset_next:
                    self.reset_next = False
                    self.resets += 1
                    for w in conn:
                        _reset(w)
                    break
                due = time.monotonic() + max(0.0, self.delay_s + self.rng.uniform(
                    -self.jitter_s, self.jitter_s))
                last = max(last, due)  # in order, as TCP delivers
                queue.put_nowait((last, data))
        except (ConnectionError, OSError):
            pass
        queue.put_nowait(None)  # after the bytes read before the end
        await sender

    async def _send(self, queue, writer, direction, source=None):
        way = (lambda: self.hold_up) if direction == "up" else (lambda: self.hold_down)

        def held():
            return way() or (source is not None and bool(self.cut_from)
                             and source.name() in self.cut_from)
        try:
            while (item := await queue.get()) is not None:
                due, data = item
                while held() or time.monotonic() < due:
                    await asyncio.sleep(POLL_S)
                if writer.is_closing():
                    return
                writer.write(data)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
        except (ConnectionError, OSError, RuntimeError):
            pass


class _Source:
    """The name `source_of` gives a connection's client, asked once when
    first needed (it may be slow: it reads /proc)."""

    def __init__(self, source_of, port):
        self.source_of, self.port, self.known, self.value = source_of, port, False, None

    def name(self):
        if not self.known:
            self.value, self.known = self.source_of(self.port), True
        return self.value


class LinkGroup:
    """Several Links of one host (one per server it reaches) that take a
    fault together: what NetworkFaults sets on a Link is set on each."""
    FAULTS = ("hold_up", "hold_down", "delay_s", "jitter_s", "reset_next")

    def __init__(self, links):
        object.__setattr__(self, "members", links)

    def __setattr__(self, name, value):
        if name not in self.FAULTS:
            raise AttributeError(name)
        for link in self.members:
            setattr(link, name, value)

    def __getattr__(self, name):
        return any(getattr(link, name) for link in self.members)

    def heal(self):
        for link in self.members:
            link.heal()

    def faulty(self):
        return any(link.faulty() for link in self.members)


@contextlib.contextmanager
def in_netns(path):
    """The calling thread in network namespace `path` (None: where it is)
    for the block, then back where it was (setns(2), as root)."""
    if path is None:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    there = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(there, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {path}")
        try:
            yield
        finally:
            if libc.setns(home, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back")
    finally:
        os.close(there)
        os.close(home)


CLONE_NEWNET = 0x40000000


def _reset(writer):
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


class Network:
    """The loop every Link runs on, and the links by (host, server)."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True, name="proxies").start()
        self.links = {}

    def link(self, host, server, target_port, netns=None, port=0, source_of=None):
        key = (host, server)
        if key not in self.links:
            self.links[key] = Link(f"{host}->{server}", target_port, self.loop, netns, port,
                                   source_of)
        return self.links[key]

    def close(self):
        for link in self.links.values():
            self.loop.call_soon_threadsafe(link.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)


def self_test():
    """Each fault against an echo server: `scripts/chaos --self-test`."""
    echo = socket.socket()
    echo.bind(("127.0.0.1", 0))
    echo.listen()

    def serve():
        while True:
            c, _ = echo.accept()
            threading.Thread(target=lambda c=c: _echo(c), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    net = Network()
    link = net.link("h0", "echo", echo.getsockname()[1])

    def call(timeout):
        """Round trip time of one echo, or None when nothing came back."""
        with socket.create_connection(("127.0.0.1", link.port), 2) as s:
            s.settimeout(timeout)
            t0 = time.monotonic()
            s.sendall(b"ping")
            try:
                got = s.recv(16)
            except socket.timeout:
                return None
            assert got == b"ping", got
            return time.monotonic() - t0

    failures = []

    def check(what, ok):
        print(f"proxy self-test: {what}: {'ok' if ok else 'FAILED'}")
        if not ok:
            failures.append(what)

    check("passes bytes", (call(2) or 9) < 0.2)
    link.delay_s = 0.3
    rtt = call(2)
    check("delay 0.3 s each way", rtt is not None and 0.55 <= rtt < 1.0)
    link.heal()
    for way in ("hold_up", "hold_down"):
        setattr(link, way, True)
        with socket.create_connection(("127.0.0.1", link.port), 2) as s:
            s.settimeout(0.3)
            s.sendall(b"ping")
            try:
                s.recv(16)
                stopped = False
            except socket.timeout:
                stopped = True
            link.heal()  # the held bytes arrive after the heal
            s.settimeout(2)
            check(f"{way} stops bytes, connection open, delivered on heal",
                  stopped and s.recv(16) == b"ping")
    link.reset_next = True
    with socket.create_connection(("127.0.0.1", link.port), 2) as s:
        s.settimeout(2)
        s.sendall(b"ping")
        try:
            reset = s.recv(16) == b""
        except ConnectionResetError:
            reset = True
        check("reset mid-call: the reply is lost, the connection reset", reset)
    check("healed link passes bytes", (call(2) or 9) < 0.2)
    net.close()
    return not failures


def _echo(c):
    with c:
        try:
            while data := c.recv(4096):
                c.sendall(data)
        except OSError:
            pass  # the reset test
