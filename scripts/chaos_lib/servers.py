"""The backends under test, one class each, and their server faults.

A backend class gives the harness: `uri(host)` (the URI a contender on that
host uses: through the host's Link when the backend has a network),
`admin_uri()` (for `simba release --force` and `simba status`, not through
any link), `links()` (every Link, by host, for the network faults),
`fault_kinds()`, `inject(kind)` (returns False when it cannot run now),
`command_prefix(host)` (what runs a simba on that host: nsenter into its
network namespace for Sentinel),
`busy()` (a server fault under way: one at a time) and `stop()`. A new
backend is one more class (here, or in a module of its own as PostgreSQL's
in postgres.py) and one line in backends.py's BACKENDS; the network faults come with its
links for free.
"""
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import threading
import time

from .proxy import Network


def free_port():
    """A free port below Linux's ephemeral ones (32768 and up by default).

    The kernel hands ephemeral ports to outgoing connections as their local
    port, and while a connection holds one no server can bind it: a server
    the chaos run kills and restarts on its own port would then fail with
    "Address already in use". Port 0 would give one of those very ports."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    if low < 22000:
        low = 32768
    for _ in range(200):
        port = random.randrange(10000, low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


def orphan_proof(argv):
    """argv killed with SIGKILL when the harness dies, even by kill -9."""
    return (["setpriv", "--pdeathsig", "KILL"] if shutil.which("setpriv") else []) + argv


class Backend:
    name = ""
    in_all = True  # run by `--backend all` (the short run)

    def __init__(self, tmp, rng, harness):
        self.tmp, self.rng, self.harness = tmp, rng, harness
        self.busy_until = 0.0

    def links(self):
        return {}

    def injected(self, kind, at):
        """A server fault of `kind` was counted at `at` (monotonic ns)."""

    def command_prefix(self, host):
        """What runs a contender's simba on `host` (a namespace's nsenter)."""
        return []

    def busy(self):
        return time.monotonic() < self.busy_until

    def stop(self):
        pass


class SqliteBackend(Backend):
    """One file on a small tmpfs of our own (disk full), when mount works."""
    name = "sqlite"
    TMPFS_BYTES = 16 << 20

    def __init__(self, tmp, rng, harness):
        super().__init__(tmp, rng, harness)
        self.dir = os.path.join(tmp, "db")
        os.mkdir(self.dir)
        self.tmpfs = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={self.TMPFS_BYTES}", "chaos", self.dir],
            capture_output=True).returncode == 0 if os.geteuid() == 0 else False
        if not self.tmpfs:
            harness.log("sqlite: no tmpfs (mount needs root): the disk_full fault is off")
        self.db = os.path.join(self.dir, "simba.db")
        self.filler = os.path.join(self.dir, "filler")

    def uri(self, host):
        return "sqlite://" + self.db  # one file: every host shares it

    def admin_uri(self):
        return self.uri(None)

    def fault_kinds(self):
        return ["sqlite_write_lock"] + (["sqlite_disk_full"] if self.tmpfs else [])

    def inject(self, kind):
        hold = self.rng.uniform(1.0, 3.0)
        self.busy_until = time.monotonic() + hold
        if kind == "sqlite_write_lock":
            threading.Thread(target=self.hold_write_lock, args=(hold,), daemon=True).start()
        elif kind == "sqlite_disk_full":
            self.fill_disk()
            self.harness.later(hold, self.empty_disk)
        return True

    def hold_write_lock(self, seconds):
        con = sqlite3.connect(self.db, timeout=30, isolation_level=None)
        con.execute("BEGIN IMMEDIATE")
        time.sleep(seconds)
        con.execute("ROLLBACK")
        con.close()

    def fill_disk(self):
        try:
            with open(self.filler, "wb") as f:
                block = b"\0" * 65536
                while True:
                    f.write(block)
                    f.flush()
        except OSError:
            pass  # ENOSPC: full (even the filler's inode, when the WAL took the rest)

    def empty_disk(self):
        if os.path.exists(self.filler):
            os.unlink(self.filler)

    def stop(self):
        if self.tmpfs:
            subprocess.run(["umount", "-l", self.dir], capture_output=True)


class RedisServer:
    """A redis-server of our own on a free loopback port."""

    def __init__(self, tmp):
        self.tmp, self.port, self.proc = tmp, free_port(), None

    def start(self, aof=False):
        self.proc = subprocess.Popen(orphan_proof(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes" if aof else "no", "--appendfsync", "everysec",
             "--dir", self.tmp]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if self.command("PING") == "+PONG":
                    return
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError("redis-server did not start")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()

    def command(self, *words):
        """One inline command, straight to the server; its reply's first line."""
        with socket.create_connection(("127.0.0.1", self.port), 5) as s:
            s.settimeout(5)
            s.sendall((" ".join(words) + "\r\n").encode())
            return s.recv(4096).split(b"\r\n")[0].decode()

    def info(self, field):
        with socket.create_connection(("127.0.0.1", self.port), 5) as s:
            s.settimeout(5)
            s.sendall(b"INFO persistence\r\n")
            for line in s.recv(65536).decode().split("\r\n"):
                if line.startswith(field + ":"):
                    return line.split(":", 1)[1]
        return None

    def forget_everything(self):
        for name in ("dump.rdb", "appendonlydir"):
            path = os.path.join(self.tmp, name)
            shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else \
                os.path.exists(path) and os.unlink(path)


class RedisBackend(Backend):
    """One redis-server; each host reaches it through a Link of its own."""
    name = "redis"
    TIMEOUT = "500ms"

    def __init__(self, tmp, rng, harness):
        super().__init__(tmp, rng, harness)
        self.server = RedisServer(tmp)
        self.server.start()
        self.net = Network()
        self.by_host = {h: self.net.link(h, "redis", self.server.port) for h in harness.hosts}

    def uri(self, host):
        # The last host's client waits long (3 s): a delayed reply reaches
        # it, late, where the others' calls time out (500 ms).
        timeout = "3s" if host == self.harness.hosts[-1] and len(self.by_host) > 1 \
            else self.TIMEOUT
        port = self.by_host[host].port
        return f"redis://127.0.0.1:{port}/0?prefix=chaos:&timeout={timeout}"

    def admin_uri(self):
        return f"redis://127.0.0.1:{self.server.port}/0?prefix=chaos:&timeout=2s"

    def links(self):
        return self.by_host

    def fault_kinds(self):
        return ["sigstop_redis", "restart_redis_empty", "restart_redis_rdb",
                "restart_redis_aof", "flushall_redis"]

    def inject(self, kind):
        s = self.server
        if kind == "sigstop_redis":
            s.proc.send_signal(signal.SIGSTOP)
            pause = 1.0 + self.rng.uniform(0.3, 1.0)  # longer than the transition
            self.hold(pause, lambda: s.proc.send_signal(signal.SIGCONT))
        elif kind == "restart_redis_empty":
            s.kill()
            s.forget_everything()
            s.start()
        elif kind == "restart_redis_rdb":
            # After a SAVE and some more traffic, kill -9 and a start on the
            # dump: the newest writes (a lease, a release) are lost.
            s.command("SAVE")
            self.hold(self.rng.uniform(0.1, 1.0), lambda: self.restart(aof=False))
        elif kind == "restart_redis_aof":
            # AOF on (everysec), its rewrite done, traffic, kill -9, a start
            # that replays the AOF.
            s.command("CONFIG", "SET", "appendonly", "yes")
            until = time.monotonic() + 5
            while s.info("aof_rewrite_in_progress") != "0" or \
                    s.info("aof_rewrite_scheduled") != "0":
                if time.monotonic() > until:
                    return False
                time.sleep(0.02)
            self.hold(self.rng.uniform(0.1, 1.5), lambda: self.restart(aof=True))
        elif kind == "flushall_redis":
            s.command("FLUSHALL")
        if kind != "sigstop_redis":
            # Data lost: the mutex is in quarantine for the longest lease
            # known + 1 s once simba notices; a fault is still under way.
            self.busy_until = max(self.busy_until, time.monotonic() + 4.0)
        return True

    def hold(self, seconds, then):
        self.busy_until = time.monotonic() + seconds + 0.5
        self.harness.later(seconds, then)

    def restart(self, aof):
        self.server.kill()
        self.server.start(aof=aof)

    def stop(self):
        self.server.kill()
        self.net.close()
